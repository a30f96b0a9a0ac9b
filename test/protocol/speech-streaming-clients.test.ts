import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyFunAsrModels, makeTinyStreamingParaformer, missingPython, referenceStreaming, referenceTranscript, SPEECH_PYTHON, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/** A local checkout of github.com/modelscope/FunASR, as test/protocol/speech-clients.test.ts runs its client. */
const FUNASR_CLIENT = process.env.FUNASR_CHECKOUT && join(process.env.FUNASR_CHECKOUT, 'runtime/python/websocket/funasr_wss_client.py');

describe.skipIf(missing || !FUNASR_CLIENT)(`FunASR's funasr_wss_client.py against a streaming Paraformer beside an offline one${missing ? ` (skipped: ${missing})` : FUNASR_CLIENT ? '' : ' (skipped: set FUNASR_CHECKOUT to a FunASR checkout)'}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-streaming-clients-'));
  let streaming = '';
  let offline = '';
  let server: ServeFnServer;
  let base = '';

  beforeAll(async () => {
    streaming = makeTinyStreamingParaformer(dir);
    offline = makeTinyFunAsrModels(dir).paraformer;
    server = new ServeFnServer({ models: [], speechFolders: [offline, streaming] });
    base = await server.listen(0, '127.0.0.1');
  }, 120_000);

  afterAll(async () => {
    await server?.close();
  });

  /** The client's last printed line for `wav` in `mode`. */
  async function clientPrints(mode: string, wav: string): Promise<string | undefined> {
    const args = [FUNASR_CLIENT!, '--host', '127.0.0.1', '--port', new URL(base).port, '--mode', mode, '--chunk_size', '5,10,5', '--audio_in', wav, '--ssl', '0', '--log_dir', mkdtempSync(join(tmpdir(), 'funasr-client-'))];
    const { stdout } = await promisify(execFile)(process.env.FUNASR_PYTHON ?? SPEECH_PYTHON, args, { timeout: 90_000 });
    return stdout.split('\n').filter((l) => l.startsWith('pid0_0: ')).at(-1);
  }

  it('prints the online partials it was sent, joined, in mode online', async () => {
    const wav = SPEECH_WAVS[0];
    const texts = referenceStreaming(streaming, wav, 9600).texts;
    expect(await clientPrints('online', wav)).toBe(`pid0_0: ${texts.join('')}`);
  }, 120_000);

  it('prints the offline model\'s text once the 2pass-offline result replaces the partials, in mode 2pass', async () => {
    const wav = SPEECH_WAVS[7];
    expect(await clientPrints('2pass', wav)).toBe(`pid0_0: ${referenceTranscript(offline, wav).text}`);
  }, 120_000);
});
