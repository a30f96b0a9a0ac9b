import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../../src/backends/onnx/onnx-backend.js';
import type { BackendSession } from '../../../src/backends/backend.js';
import { decodeAudioFile } from '../../../src/speech/audio-input.js';
import { FsmnVadStream } from '../../../src/speech/fsmn-vad.js';
import type { VadBoundary } from '../../../src/speech/fsmn-vad-state-machine.js';
import { readVadFolder, type VadFolder } from '../../../src/speech/speech-chain-folders.js';
import { makeTinyVadAndPunctuation, missingPython, referenceVadLogits, SPEECH_WAVS } from '../../helpers/speech-python.js';

const missing = missingPython(['torchaudio', 'onnx', 'numpy']);
const WAV = SPEECH_WAVS[0];
/**
 * The segments of the reference's scores and this recording's decibels under the tiny folder's model_conf
 * (max_end_silence_time 300): what FunASR's own E2EVadModel (funasr_onnx/utils/e2e_vad.py) returned when
 * run on the reference's logits while this test was written.
 */
const SEGMENTS = [[230, 900], [900, 1460], [1460, 1810]];

/** The session, recording every `logits` it produced and the chunk lengths it was run on. */
function recording(session: BackendSession): { session: BackendSession; logits: Float32Array[]; chunks: number[] } {
  const logits: Float32Array[] = [];
  const chunks: number[] = [];
  return {
    logits,
    chunks,
    session: {
      ...session,
      metadata: () => session.metadata(),
      async run(inputs, outputs) {
        chunks.push(inputs.speech.shape[1]);
        const produced = await session.run(inputs, outputs);
        logits.push(Float32Array.from(produced.logits.data as Float32Array));
        return produced;
      },
    },
  };
}

async function stream(folder: VadFolder, session: BackendSession, samples: Float32Array, chunk: number): Promise<{ boundaries: VadBoundary[]; segments: [number, number][] }> {
  const vad = new FsmnVadStream(folder.config, session);
  const boundaries: VadBoundary[] = [];
  for (let at = 0; at < samples.length; at += chunk) boundaries.push(...(await vad.push(samples.subarray(at, at + chunk))));
  boundaries.push(...(await vad.finish()));
  return { boundaries, segments: vad.segments() };
}

function concat(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const p of parts) out.set(p, (at += p.length) - p.length);
  return out;
}

describe.skipIf(missing)('FSMN-VAD on a tiny FSMN-shaped export', () => {
  let dir = '';
  let folder: VadFolder;
  let session: BackendSession;
  let samples: Float32Array;
  let reference: Float32Array;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'fsmn-vad-'));
    folder = readVadFolder(makeTinyVadAndPunctuation(dir).vad);
    session = await new OnnxBackend().load(folder.modelFile, { options: { intraOpNumThreads: 1 } });
    samples = decodeAudioFile(new Uint8Array(readFileSync(WAV))).samples;
    referenceVadLogits(folder.dir, WAV, join(dir, 'logits.f32'));
    reference = new Float32Array(readFileSync(join(dir, 'logits.f32')).buffer.slice(0));
  }, 60_000);
  afterAll(async () => {
    await session?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads the folder: the cache shape from encoder_conf, lfr 5/1, the thresholds from model_conf', () => {
    expect(folder.config.cache).toEqual({ layers: 4, projDim: 8, lorder: 4 });
    expect([folder.config.frontEnd.lfrM, folder.config.frontEnd.lfrN, folder.config.cmvn.shift.length]).toEqual([5, 1, 400]);
    expect(folder.config.vad.speechNoiseThres).toBe(0.6);
  });

  it('gives the independent reference\'s scores, fed whole or in chunks with its FSMN caches carried, and the same segments', async () => {
    const whole = recording(session);
    const a = await stream(folder, whole.session, samples, samples.length);
    const chunked = recording(session);
    const b = await stream(folder, chunked.session, samples, 1234);
    expect(chunked.chunks.length).toBeGreaterThan(10);
    for (const run of [whole, chunked]) {
      const got = concat(run.logits);
      expect(got.length).toBe(reference.length);
      let worst = 0;
      for (let i = 0; i < got.length; i++) worst = Math.max(worst, Math.abs(got[i] - reference[i]));
      expect(worst).toBeLessThan(1e-4);
    }
    expect(b).toEqual(a);
    expect(a.segments).toEqual(SEGMENTS);
    // Each segment is reported once started, then once ended, in order.
    expect(a.boundaries.map((x) => x.ms)).toEqual(a.segments.flat());
  });
});
