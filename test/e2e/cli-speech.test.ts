import { existsSync, mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readFileSync } from 'node:fs';
import { Client, credentials } from '@grpc/grpc-js';
import { describe, expect, it } from 'vitest';
import { call } from '../protocol/grpc-raw.js';
import { parse, pb, rawBytes } from '../protocol/protobuf-wire.js';
import { makeTinyFunAsrModels, missingPython, referenceTranscript, SPEECH_WAVS } from '../helpers/speech-python.js';
import { startCli } from './cli-harness.js';

const missing = missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');

/** `serve-fn start` on a folder of FunASR export folders, as a user runs it on FunASR's exports. */
describe.skipIf(missing)(`serve-fn start <FunASR export folders>${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('serves every export folder of a parent folder with no code, takes --max-audio-seconds, and drains on SIGTERM', async () => {
    const root = mkdtempSync(join(tmpdir(), 'cli-speech-'));
    const models = makeTinyFunAsrModels(root);
    const cli = await startCli(['start', root, '--host', '127.0.0.1', '--max-audio-seconds', '4']);
    try {
      const grpcPort = Number((await cli.waitForOutput(/"grpcPort":(\d+)/, 90_000))[1]);
      const listed = (await (await fetch(`${cli.base}/v2/repository/index`, { method: 'POST' })).json()) as { name: string; state: string }[];
      expect(listed.map((m) => [m.name, m.state])).toEqual([['Paraformer-tiny', 'READY'], ['SenseVoiceSmall-tiny', 'READY']]);
      const transcribe = async (wav: string): Promise<{ status: number; json: any }> => {
        const form = new FormData();
        form.append('file', new Blob([readFileSync(wav)]), 'a.wav');
        form.append('model', 'Paraformer-tiny');
        const res = await fetch(`${cli.base}/v1/audio/transcriptions`, { method: 'POST', body: form });
        return { status: res.status, json: await res.json() };
      };
      const ok = await transcribe(SPEECH_WAVS[2]);
      expect(ok.status).toBe(200);
      expect(ok.json.text).toBe(referenceTranscript(models.paraformer, SPEECH_WAVS[2]).text);
      // KServe v2 over gRPC: AUDIO's raw contents are the WAV file as one BYTES element (4-byte length, then the bytes).
      const wav = readFileSync(SPEECH_WAVS[2]);
      const raw = Buffer.concat([Buffer.from(new Uint32Array([wav.byteLength]).buffer), wav]);
      const request = Buffer.concat([pb.string(1, 'Paraformer-tiny'), pb.message(5, pb.string(1, 'AUDIO'), pb.string(2, 'BYTES'), pb.packedVarints(3, [1, 1])), pb.message(6, pb.string(1, 'TRANSCRIPT')), pb.bytes(7, raw)]);
      const client = new Client(`127.0.0.1:${grpcPort}`, credentials.createInsecure());
      try {
        const [transcript] = rawBytes(parse(await call(client, 'ModelInfer', request)), 6);
        expect(transcript.subarray(4).toString('utf8')).toBe(ok.json.text);
      } finally {
        client.close();
      }
      // The 5.3 s recording is over the 4 s the flag allows.
      const long = await transcribe(SPEECH_WAVS[7]);
      expect(long.status).toBe(400);
      expect(long.json.error.message).toMatch(/over the limit of 4 s/);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 150_000);
});
