import { readFileSync } from 'node:fs';
import wavefile from 'wavefile';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { SpeechDetector } from '../../examples/vad/index.js';
import { WINDOW_SAMPLES } from '../../examples/vad/silero-vad.js';
import { DEFAULT_SEGMENT_OPTIONS, speechSegments } from '../../examples/vad/speech-segments.js';
import { decodeWav, VAD_SAMPLE_RATE } from '../../examples/vad/wav-decoder.js';
import { metricsCounts, statisticsCounts } from '../helpers/statistics-and-metrics.js';

const WAV = readFileSync(new URL('../fixtures/vad/speech.wav', import.meta.url));
/**
 * Where make-speech-wav.sh put the speech: 0.5 s of silence, phrase one (48390 samples), 1.0 s of
 * silence, phrase two (40017 samples), 0.5 s of silence, at 16 kHz.
 */
const EXPECTED = [
  { start_ms: 500, end_ms: (8000 + 48390) / 16 },
  { start_ms: (8000 + 48390 + 16000) / 16, end_ms: (8000 + 48390 + 16000 + 40017) / 16 },
];
const TOTAL_MS = Math.round(120407 / 16);
/** Silero's windows are 32 ms, it reacts a window or two late, and quiet word endings fade: 150 ms is the allowance. */
const TOLERANCE_MS = 150;

interface Segment {
  start_ms: number;
  end_ms: number;
}

function expectNear(segments: Segment[], expected: Segment[], tolerance: number): void {
  expect(segments).toHaveLength(expected.length);
  segments.forEach((s, i) => {
    expect(Math.abs(s.start_ms - expected[i].start_ms)).toBeLessThanOrEqual(tolerance);
    expect(Math.abs(s.end_ms - expected[i].end_ms)).toBeLessThanOrEqual(tolerance);
  });
}

function multipart(fields: Record<string, string>, file: { bytes: Uint8Array; filename: string; type: string }): { payload: Buffer; headers: Record<string, string> } {
  const boundary = '----serve-fn-vad-test';
  const parts = Object.entries(fields).map(([k, v]) => Buffer.from(`--${boundary}\r\ncontent-disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="audio"; filename="${file.filename}"\r\ncontent-type: ${file.type}\r\n\r\n`;
  const payload = Buffer.concat([...parts, Buffer.from(head), file.bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

function fixtureAs(channels: number, sampleRate: number, bitDepth: string, length = Infinity): Buffer {
  const mono = new wavefile.WaveFile(WAV);
  const out = new wavefile.WaveFile();
  const samples = (mono.getSamples(false, Int16Array) as unknown as Int16Array).subarray(0, length);
  out.fromScratch(channels, 16_000, '16', channels === 1 ? samples : Array.from({ length: channels }, () => samples));
  if (sampleRate !== 16_000) out.toSampleRate(sampleRate);
  if (bitDepth !== '16') out.toBitDepth(bitDepth);
  return Buffer.from(out.toBuffer());
}

/** A 16-bit mono 16 kHz WAV of 0.1 s, its header fields set as given (RIFF WAVE, a 16-byte fmt chunk). */
function wavWithHeader(header: { format?: number; channels?: number; rate?: number; bits?: number; blockAlign?: number; declared?: number; dataBytes?: number }): Buffer {
  const { format = 1, channels = 1, rate = 16_000, bits = 16, dataBytes = 3200 } = header;
  const head = Buffer.alloc(44);
  head.write('RIFF', 0);
  head.writeUInt32LE(36 + dataBytes, 4);
  head.write('WAVEfmt ', 8);
  head.writeUInt32LE(16, 16);
  head.writeUInt16LE(format, 20);
  head.writeUInt16LE(channels, 22);
  head.writeUInt32LE(rate, 24);
  head.writeUInt32LE((rate * channels * bits) / 8, 28);
  head.writeUInt16LE(header.blockAlign ?? (channels * bits) / 8, 32);
  head.writeUInt16LE(bits, 34);
  head.write('data', 36);
  head.writeUInt32LE(header.declared ?? dataBytes, 40);
  return Buffer.concat([head, Buffer.alloc(dataBytes, 1)]);
}

describe('VAD example (Silero VAD v5, batched)', () => {
  let server: ServeFnServer;

  beforeAll(async () => {
    server = new ServeFnServer({
      models: [SpeechDetector],
      moduleUrl: new URL('../../examples/vad/index.ts', import.meta.url).href,
      collectProcessMetrics: false,
    });
    await server.start();
  });

  afterAll(async () => {
    await server?.close();
  });

  const send = (bytes: Uint8Array, fields: Record<string, string> = {}, filename = 'speech.wav', type = 'audio/wav') =>
    server.app.inject({ method: 'POST', url: '/vad', ...multipart(fields, { bytes, filename, type }) });

  it('finds the two phrases of the fixture where they were put', async () => {
    const res = await send(WAV);
    expect(res.statusCode).toBe(200);
    const body = res.json() as { duration_ms: number; segments: Segment[] };
    expect(body.duration_ms).toBe(TOTAL_MS);
    expectNear(body.segments, EXPECTED, TOLERANCE_MS);
  });

  it('joins the phrases when the minimum silence is longer than the pause between them', async () => {
    const res = await send(WAV, { min_silence_ms: '1500' });
    expect(res.statusCode).toBe(200);
    const [segment, ...rest] = res.json().segments as Segment[];
    expect(rest).toEqual([]);
    expect(Math.abs(segment.start_ms - EXPECTED[0].start_ms)).toBeLessThanOrEqual(TOLERANCE_MS);
    // The trailing 0.5 s of silence is shorter than the minimum too, so the speech runs to the end.
    expect(segment.end_ms).toBe(TOTAL_MS);
  });

  it('pads segments by speech_pad_ms', async () => {
    const [padded, bare] = await Promise.all([send(WAV, { speech_pad_ms: '30' }), send(WAV, { speech_pad_ms: '0' })]);
    const a = padded.json().segments as Segment[];
    const b = bare.json().segments as Segment[];
    expect(a.map((s, i) => [b[i].start_ms - s.start_ms, s.end_ms - b[i].end_ms])).toEqual([[30, 30], [30, 30]]);
  });

  it('reads stereo 44.1 kHz 24-bit WAV the same as the 16 kHz mono original', async () => {
    const res = await send(fixtureAs(2, 44_100, '24'));
    expect(res.statusCode).toBe(200);
    expect(Math.abs(res.json().duration_ms - TOTAL_MS)).toBeLessThanOrEqual(1);
    expectNear(res.json().segments, EXPECTED, TOLERANCE_MS);
  });

  it('batches concurrent recordings and fails only the unreadable one', async () => {
    const before = await counters();
    const half = fixtureAs(1, 16_000, '16', 60_000);
    const [whole, first, broken] = await Promise.all([send(WAV), send(half), send(Buffer.from('RIFF but not really'))]);
    expectNear(whole.json().segments, EXPECTED, TOLERANCE_MS);
    expectNear(first.json().segments, [{ start_ms: EXPECTED[0].start_ms, end_ms: EXPECTED[0].end_ms }], TOLERANCE_MS);
    expect(broken.statusCode).toBe(400);
    const after = await counters();
    expect(after.executions - before.executions).toBeLessThan(3);
  });

  async function counters(): Promise<{ executions: number }> {
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    return { executions: Number(text.match(/^nv_inference_exec_count\{model="silero-vad",version="1"\} (\d+)/m)?.[1] ?? 0) };
  }

  it('answers a file that is not a WAV with 400', async () => {
    const res = await send(Buffer.from('just some text, not audio'));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({
      error: 'The audio is not a readable WAV file (Not a supported format.); send a RIFF WAV file.',
      code: 'SF_ERR_BAD_REQUEST',
    });
  });

  it('answers an empty file and a WAV without samples with 400', async () => {
    const silent = new wavefile.WaveFile();
    silent.fromScratch(1, 16_000, '16', []);
    const [empty, noSamples] = await Promise.all([send(Buffer.alloc(0)), send(Buffer.from(silent.toBuffer()))]);
    expect([empty.statusCode, empty.json().error]).toEqual([400, 'The audio file is empty (0 bytes).']);
    expect([noSamples.statusCode, noSamples.json().error]).toEqual([400, 'The WAV file holds no audio samples.']);
  });

  it('answers a compressed WAV encoding with 400 naming it', async () => {
    const mulaw = new wavefile.WaveFile(WAV);
    mulaw.toMuLaw();
    const res = await send(Buffer.from(mulaw.toBuffer()));
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe("WAV encoding '8m' (format tag 7) is not supported; send PCM (8, 16, 24 or 32-bit) or IEEE float.");
  });

  it.each([
    ['0 channels', { channels: 0, blockAlign: 2 }, 'The WAV header gives 0 channels; a WAV file has at least one.'],
    ['a sample rate of 0', { rate: 0 }, 'WAV sample rate 0 Hz is out of range; send 8 kHz to 192 kHz.'],
    ['12-bit samples', { bits: 12, blockAlign: 2 }, "WAV encoding '12' (format tag 1) is not supported; send PCM (8, 16, 24 or 32-bit) or IEEE float."],
    ['0-bit samples', { bits: 0, blockAlign: 2 }, "WAV encoding '0' (format tag 1) is not supported; send PCM (8, 16, 24 or 32-bit) or IEEE float."],
    ['16-bit IEEE float', { format: 3 }, "WAV encoding '16' (format tag 3) is not supported; send PCM (8, 16, 24 or 32-bit) or IEEE float."],
    ['a block align that does not fit', { blockAlign: 0 }, 'The WAV header gives a block align of 0 bytes; 1 channel(s) of 16-bit samples take 2.'],
    ['a data chunk cut short', { declared: 32_000 }, 'The WAV file is truncated: its data chunk declares 32000 bytes and holds 3200.'],
    ['data ending inside a frame', { dataBytes: 3201 }, 'The WAV data (3201 bytes) ends inside a frame; each frame is 2 bytes.'],
  ])('answers a WAV header with %s with 400, and keeps serving', async (_name, header, message) => {
    const res = await send(wavWithHeader(header));
    expect([res.statusCode, res.json()]).toEqual([400, { error: message, code: 'SF_ERR_BAD_REQUEST' }]);
    expect((await send(wavWithHeader({}))).statusCode).toBe(200);
  });

  it('answers a non-WAV upload type and out-of-range options with 422', async () => {
    const wrongType = await send(WAV, {}, 'speech.mp3', 'audio/mpeg');
    expect(wrongType.statusCode).toBe(422);
    expect(wrongType.json().detail[0].loc).toEqual(['body', 'audio']);
    const badThreshold = await send(WAV, { threshold: '1.5' });
    expect(badThreshold.statusCode).toBe(422);
    expect(badThreshold.json().detail[0]).toMatchObject({ loc: ['body', 'threshold'], msg: 'threshold must not be greater than 0.95' });
  });

  it('counts in /v2 statistics what /metrics counts', async () => {
    const stats = await statisticsCounts(server.app);
    expect(Object.keys(stats)).toEqual(['silero-vad:1']);
    expect(stats).toEqual(await metricsCounts(server.app));
    expect(stats['silero-vad:1'].success).toBeGreaterThan(0);
    expect(stats['silero-vad:1'].failure).toBeGreaterThan(0);
  });

  it('answers KServe v2 infer on its tensor interface with the probabilities its /vad route places segments by', async () => {
    const { samples } = decodeWav(WAV);
    const header = JSON.stringify({
      inputs: [{ name: 'AUDIO', datatype: 'FP32', shape: [1, samples.length], parameters: { binary_data_size: samples.byteLength } }],
      outputs: [{ name: 'PROBABILITIES', parameters: { binary_data: true } }],
    });
    const body = Buffer.concat([Buffer.from(header), Buffer.from(samples.buffer, samples.byteOffset, samples.byteLength)]);
    const [infer, route] = await Promise.all([
      server.app.inject({
        method: 'POST',
        url: '/v2/models/silero-vad/infer',
        payload: body,
        headers: { 'content-type': 'application/octet-stream', 'inference-header-content-length': String(Buffer.byteLength(header)) },
      }),
      send(WAV),
    ]);
    expect(infer.statusCode).toBe(200);
    const length = Number(infer.headers['inference-header-content-length']);
    const windows = Math.ceil(samples.length / WINDOW_SAMPLES);
    expect(JSON.parse(infer.rawPayload.subarray(0, length).toString()).outputs).toEqual([
      { name: 'PROBABILITIES', datatype: 'FP32', shape: [1, windows], parameters: { binary_data_size: windows * 4 } },
    ]);
    const raw = infer.rawPayload.subarray(length);
    const probabilities = new Float32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.length));
    const ms = (n: number): number => Math.round((n * 1000) / VAD_SAMPLE_RATE);
    const segments = speechSegments(probabilities, WINDOW_SAMPLES, samples.length, VAD_SAMPLE_RATE, DEFAULT_SEGMENT_OPTIONS).map((s) => ({ start_ms: ms(s.start), end_ms: ms(s.end) }));
    expect(segments).toEqual(route.json().segments);
  });
});

describe('speechSegments (get_speech_timestamps)', () => {
  const options = { ...DEFAULT_SEGMENT_OPTIONS, minSpeechMs: 0, speechPadMs: 0 };
  // 100-sample windows at 1 kHz: one window is 100 ms, so minSilenceMs 100 ends speech one window into silence.
  const run = (probs: number[], opts = options) => speechSegments(probs, 100, probs.length * 100, 1000, opts);

  it('opens at the threshold, closes after the minimum silence below the lower threshold', () => {
    expect(run([0, 0.6, 0.9, 0.4, 0.2, 0.1, 0, 0.7, 0.2, 0.1])).toEqual([{ start: 100, end: 400 }, { start: 700, end: 800 }]);
  });

  it('keeps speech open through a dip shorter than the minimum silence', () => {
    expect(run([0.9, 0.1, 0.9, 0.1, 0.1, 0.1], { ...options, minSilenceMs: 150 })).toEqual([{ start: 0, end: 300 }]);
  });

  it('drops speech shorter than the minimum and runs open speech to the end', () => {
    expect(run([0.9, 0.1, 0.1, 0, 0.8, 0.8, 0.8], { ...options, minSpeechMs: 150 })).toEqual([{ start: 400, end: 700 }]);
  });

  it('pads segments, splitting a gap narrower than twice the padding', () => {
    const padded = { ...options, speechPadMs: 150 };
    expect(run([0, 0, 0.9, 0.1, 0.1, 0.9, 0.1, 0.1, 0, 0], padded)).toEqual([{ start: 50, end: 400 }, { start: 400, end: 750 }]);
  });
});
