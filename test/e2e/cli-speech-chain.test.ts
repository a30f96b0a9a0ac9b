import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { makeTinyFunAsrModels, makeTinyVadAndPunctuation, missingPython, SPEECH_PYTHON, SPEECH_WAVS } from '../helpers/speech-python.js';
import { startCli } from './cli-harness.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/** FunASR's own client, from a FunASR checkout (as test/protocol/speech-clients.test.ts finds it). */
const FUNASR_CLIENT = process.env.FUNASR_CHECKOUT && join(process.env.FUNASR_CHECKOUT, 'runtime/python/websocket/funasr_wss_client.py');
const WAV = SPEECH_WAVS[0];
/** The tiny VAD's segments of this recording (test/unit/speech/fsmn-vad.test.ts checks them against FunASR's E2EVadModel). */
const SEGMENTS_MS = [[230, 900], [900, 1460], [1460, 1810]];

interface BinaryInput {
  readonly name: string;
  readonly datatype: string;
  readonly shape: number[];
  /** A BYTES element's bytes, or an INT32's value. */
  readonly value: Uint8Array | number;
}

/** One KServe v2 inference in the binary extension (AUDIO is not UTF-8); the named output's data, as JSON. */
async function infer(base: string, model: string, inputs: BinaryInput[], output: string): Promise<unknown[]> {
  const parts = inputs.map((i) => {
    if (typeof i.value === 'number') return Buffer.from(Int32Array.of(i.value).buffer);
    const length = Buffer.alloc(4);
    length.writeUInt32LE(i.value.length);
    return Buffer.concat([length, i.value]);
  });
  const header = JSON.stringify({ inputs: inputs.map((i, n) => ({ name: i.name, datatype: i.datatype, shape: i.shape, parameters: { binary_data_size: parts[n].length } })), outputs: [{ name: output, parameters: { binary_data: false } }] });
  const res = await fetch(`${base}/v2/models/${model}/infer`, { method: 'POST', body: Buffer.concat([Buffer.from(header), ...parts]), headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(Buffer.byteLength(header)) } });
  expect(res.status).toBe(200);
  return ((await res.json()) as { outputs: { name: string; data: unknown[] }[] }).outputs.find((o) => o.name === output)!.data;
}

/** `serve-fn start <parent folder>` with an ASR, an FSMN-VAD and a CT-Transformer export: the chain, as FunASR's 2pass server runs it, with no code. */
describe.skipIf(missing)(`serve-fn start <ASR + VAD + punctuation folders>${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it(`chains VAD → ASR → punctuation for OpenAI's verbose_json${FUNASR_CLIENT ? " and FunASR's funasr_wss_client.py (offline, 2pass)" : ' (funasr_wss_client.py skipped: set FUNASR_CHECKOUT to a FunASR checkout)'}, each model on /v2 too`, async () => {
    const made = mkdtempSync(join(tmpdir(), 'cli-chain-made-'));
    const root = mkdtempSync(join(tmpdir(), 'cli-chain-'));
    renameSync(makeTinyFunAsrModels(made).paraformer, join(root, 'Paraformer-tiny'));
    makeTinyVadAndPunctuation(root);
    const cli = await startCli(['start', root, '--host', '127.0.0.1']);
    try {
      await cli.waitForOutput(/"grpcPort":(\d+)/, 90_000);
      const listed = (await (await fetch(`${cli.base}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; state: string }[];
      expect(listed.map((m) => [m.name, m.state])).toEqual([['Paraformer-tiny', 'READY'], ['ct-punc-tiny', 'READY'], ['fsmn-vad-tiny', 'READY']]);

      // What the chain must answer, composed by hand from each model's own /v2 face: the VAD's
      // segments, the ASR's text of each cut alone, the punctuation model's text of that.
      const wav = readFileSync(WAV);
      expect(await infer(cli.base, 'fsmn-vad-tiny', [{ name: 'AUDIO', datatype: 'BYTES', shape: [1], value: wav }], 'SEGMENTS')).toEqual(SEGMENTS_MS.flat());
      const pcm = wav.subarray(44);
      const expected: string[] = [];
      for (const [start, end] of SEGMENTS_MS) {
        const [text] = (await infer(cli.base, 'Paraformer-tiny', [{ name: 'AUDIO', datatype: 'BYTES', shape: [1, 1], value: pcm.subarray(start * 32, end * 32) }, { name: 'SAMPLE_RATE', datatype: 'INT32', shape: [1, 1], value: 16_000 }], 'TRANSCRIPT')) as string[];
        const [punctuated] = (await infer(cli.base, 'ct-punc-tiny', [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], value: Buffer.from(text) }], 'PUNCTUATED')) as string[];
        expect(text.length).toBeGreaterThan(0);
        // The tiny punctuation model ends every text with 。 or ？ (test/unit/speech/ct-punctuation.test.ts).
        expect(punctuated).toMatch(/[。？]$/);
        expected.push(punctuated);
      }

      const form = new FormData();
      form.append('file', new Blob([wav]), 'a.wav');
      form.append('model', 'Paraformer-tiny');
      form.append('response_format', 'verbose_json');
      const res = await fetch(`${cli.base}/v1/audio/transcriptions`, { method: 'POST', body: form });
      expect(res.status).toBe(200);
      const verbose = (await res.json()) as { text: string; segments: { start: number; end: number; text: string }[] };
      expect(verbose.segments.map((s) => [s.start, s.end, s.text])).toEqual(SEGMENTS_MS.map(([s, e], i) => [s / 1000, e / 1000, expected[i]]));
      expect(verbose.text).toBe(expected.join(''));

      if (FUNASR_CLIENT) {
        for (const mode of ['offline', '2pass']) {
          const args = [FUNASR_CLIENT, '--host', '127.0.0.1', '--port', new URL(cli.base).port, '--mode', mode, '--audio_in', WAV, '--ssl', '0', '--log_dir', mkdtempSync(join(tmpdir(), 'funasr-client-'))];
          const { stdout } = await promisify(execFile)(process.env.FUNASR_PYTHON ?? SPEECH_PYTHON, args, { timeout: 60_000 });
          // The client prints the segments' texts joined as they arrive (offline with its "demo" prefix); 2pass has no streaming model here, so only 2pass-offline results.
          const printed = stdout.split('\n').filter((l) => l.startsWith('pid0_0: ')).at(-1);
          expect([mode, printed]).toEqual([mode, mode === 'offline' ? `pid0_0: demo: ${expected.join('')}` : `pid0_0: ${expected.join('')}`]);
        }
      }
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 240_000);
});
