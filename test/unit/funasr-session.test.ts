import { describe, expect, it } from 'vitest';
import { ServeFnError } from '../../src/errors/index.js';
import { funAsrSession, parseHotwords } from '../../src/adapters/funasr/funasr-session.js';
import type { FunAsrMessage, FunAsrReply } from '../../src/adapters/funasr/funasr-message.js';
import type { FunAsrRecognizer, RecognizeOptions, RecognitionResult } from '../../src/adapters/funasr/funasr-recognizer.js';
import type { StreamingVad, VadEvent } from '../../src/adapters/funasr/streaming-vad.js';

const MS = 16; // samples per ms at 16 kHz
/** Sample i of every test stream is i mod RAMP, so a recognizer can tell where its audio was cut from. */
const RAMP = 30_000;

/** A VAD that announces scripted events once the stream has reached `at` (in ms). */
class ScriptedVad implements StreamingVad {
  processedSamples = 0;
  #script: { event: VadEvent; at: number }[];
  #open = false;
  constructor(script: readonly (readonly [VadEvent['kind'], number, number])[]) {
    this.#script = script.map(([kind, ms, atMs]) => ({ event: { kind, sample: ms * MS }, at: atMs * MS }));
  }
  async push(samples: Float32Array): Promise<readonly VadEvent[]> {
    this.processedSamples += samples.length;
    return this.#due((at) => at <= this.processedSamples);
  }
  async finish(): Promise<readonly VadEvent[]> {
    const events = this.#due(() => true);
    return this.#open ? [...events, { kind: 'end', sample: this.processedSamples }] : events;
  }
  #due(ready: (at: number) => boolean): VadEvent[] {
    const due = this.#script.filter((s) => ready(s.at));
    this.#script = this.#script.filter((s) => !due.includes(s));
    for (const { event } of due) this.#open = event.kind === 'start';
    return due.map((s) => s.event);
  }
}

interface Call {
  pass: string;
  final: boolean;
  segment: number;
  fromMs: number;
  toMs: number;
}

/** Answers `pass#segment from-to` in ms, after checking the audio is the stream's own samples from startMs. */
class ScriptedRecognizer implements FunAsrRecognizer {
  readonly calls: Call[] = [];
  readonly options: RecognizeOptions[] = [];
  constructor(private readonly answer: (call: Call) => RecognitionResult = (c) => ({ text: `${c.pass}#${c.segment} ${c.fromMs}-${c.toMs}` })) {}
  async recognize(audio: Float32Array, options: RecognizeOptions): Promise<RecognitionResult> {
    const first = options.startMs * MS;
    audio.forEach((s, i) => {
      if (Math.round(s * 32768) !== (first + i) % RAMP) throw new Error(`sample ${i} of the ${options.pass} audio from ${options.startMs} ms is not the stream's`);
    });
    const call = { pass: options.pass, final: options.final, segment: options.segment, fromMs: options.startMs, toMs: options.startMs + audio.length / MS };
    this.calls.push(call);
    this.options.push(options);
    return this.answer(call);
  }
}

/** 16-bit little-endian PCM of the ramp from `fromMs` for `ms`. */
function pcm(fromMs: number, ms: number): Uint8Array {
  const bytes = new Uint8Array(ms * MS * 2);
  const view = new DataView(bytes.buffer);
  for (let i = 0; i < ms * MS; i++) view.setInt16(2 * i, (fromMs * MS + i) % RAMP, true);
  return bytes;
}

/** A stream of `totalMs` cut into 60 ms frames (FunASR's client frame for chunk_size [5, 10, 5]). */
function frames(totalMs: number, frameMs = 60): Uint8Array[] {
  const out: Uint8Array[] = [];
  for (let at = 0; at < totalMs; at += frameMs) out.push(pcm(at, Math.min(frameMs, totalMs - at)));
  return out;
}

type Logged = { sent: string } | { reply: FunAsrReply };

/** Runs a session, logging each frame as it is taken and each reply as it comes, so their order shows. */
async function run(messages: (FunAsrMessage | Uint8Array)[], recognizer: FunAsrRecognizer, vads: StreamingVad[]): Promise<Logged[]> {
  const log: Logged[] = [];
  async function* input(): AsyncGenerator<FunAsrMessage | Uint8Array> {
    for (const [i, m] of messages.entries()) {
      log.push({ sent: m instanceof Uint8Array ? `audio ${i}` : JSON.stringify(m) });
      yield m;
    }
  }
  let next = 0;
  for await (const reply of funAsrSession(input(), { recognizer, createVad: () => vads[next++] })) log.push({ reply });
  expect(next).toBe(vads.length);
  return log;
}

const replies = (log: Logged[]): FunAsrReply[] => log.flatMap((l) => ('reply' in l ? [l.reply] : []));
const END: FunAsrMessage = { is_speaking: false };
/** Two segments: 500–1200 ms (decided at 1700 ms) and 2000 ms to the end of the 3 s stream. */
const TWO_SEGMENTS = () => new ScriptedVad([['start', 500, 800], ['end', 1200, 1700], ['start', 2000, 2300]]);

describe('funAsrSession, offline mode', () => {
  it('answers each VAD segment once it ends, the last one final, echoing wav_name, with timestamps shifted to the utterance', async () => {
    const recognizer = new ScriptedRecognizer((c) => ({ text: `${c.fromMs}-${c.toMs}`, timestamp: [[0, 100], [100, 250]] }));
    const log = await run([{ mode: 'offline', wav_name: 'a.wav', is_speaking: true }, ...frames(3000), END], recognizer, [TWO_SEGMENTS()]);
    expect(replies(log)).toEqual([
      { mode: 'offline', text: '500-1200', wav_name: 'a.wav', is_final: false, timestamp: '[[500,600],[600,750]]' },
      { mode: 'offline', text: '2000-3000', wav_name: 'a.wav', is_final: true, timestamp: '[[2000,2100],[2100,2250]]' },
    ]);
    // The first answer comes right after the frame in which the VAD closed the segment (frame 28 covers 1680–1740 ms).
    const first = log.findIndex((l) => 'reply' in l);
    expect(log[first - 1]).toEqual({ sent: 'audio 29' });
    expect(recognizer.calls.map((c) => [c.pass, c.final, c.segment])).toEqual([['offline', true, 0], ['offline', true, 1]]);
  });

  it('sends an empty final reply when the speech ended before the end frame, and none for empty text', async () => {
    const recognizer = new ScriptedRecognizer((c) => ({ text: c.segment === 0 ? 'hello' : '' }));
    const vad = new ScriptedVad([['start', 100, 400], ['end', 600, 900], ['start', 1000, 1300], ['end', 1200, 1500]]);
    const log = await run([{ mode: 'offline', wav_name: 'b' }, ...frames(2000), END], recognizer, [vad]);
    expect(replies(log)).toEqual([
      { mode: 'offline', text: 'hello', wav_name: 'b', is_final: false },
      { mode: 'offline', text: '', wav_name: 'b', is_final: true },
    ]);
  });
});

describe('funAsrSession, online mode', () => {
  it('recognizes every chunk_size[1] x 60 ms of an open segment and the rest of it when it ends', async () => {
    const recognizer = new ScriptedRecognizer();
    const vad = new ScriptedVad([['start', 500, 700], ['end', 2500, 2900]]);
    const log = await run([{ mode: 'online', chunk_size: [5, 10, 5], chunk_interval: 10, wav_name: 'mic' }, ...frames(3600), END], recognizer, [vad]);
    expect(replies(log)).toEqual([
      { mode: 'online', text: 'online#0 500-1100', wav_name: 'mic', is_final: false },
      { mode: 'online', text: 'online#0 1100-1700', wav_name: 'mic', is_final: false },
      { mode: 'online', text: 'online#0 1700-2300', wav_name: 'mic', is_final: false },
      { mode: 'online', text: 'online#0 2300-2500', wav_name: 'mic', is_final: false },
      { mode: 'online', text: '', wav_name: 'mic', is_final: true },
    ]);
    expect(recognizer.calls.map((c) => c.final)).toEqual([false, false, false, true]);
    // A chunk is recognized as soon as its audio is in: 500–1100 ms with the frame ending at 1140 ms.
    expect(log.findIndex((l) => 'reply' in l)).toBe(log.findIndex((l) => 'sent' in l && l.sent === 'audio 19') + 1);
  });

  it('reads chunk_size in its string form and gives the last chunk of a segment open at the end as the final reply', async () => {
    const recognizer = new ScriptedRecognizer();
    const vad = new ScriptedVad([['start', 0, 300]]);
    const log = await run([{ mode: 'online', chunk_size: '0,4,0', wav_name: 's' }, ...frames(600, 100), END], recognizer, [vad]);
    expect(replies(log).map((r) => [r.text, r.is_final])).toEqual([['online#0 0-240', false], ['online#0 240-480', false], ['online#0 480-600', true]]);
  });
});

describe('funAsrSession, 2pass mode', () => {
  it('sends 2pass-online partials, drops the online text of the last chunk, and corrects each segment with 2pass-offline', async () => {
    const recognizer = new ScriptedRecognizer();
    const log = await run([{ mode: '2pass', chunk_size: [5, 10, 5], wav_name: 'two' }, ...frames(3000), { is_speaking: false, is_end: true }], recognizer, [TWO_SEGMENTS()]);
    expect(replies(log)).toEqual([
      { mode: '2pass-online', text: 'online#0 500-1100', wav_name: 'two', is_final: false },
      { mode: '2pass-offline', text: 'offline#0 500-1200', wav_name: 'two', is_final: false },
      { mode: '2pass-online', text: 'online#1 2000-2600', wav_name: 'two', is_final: false },
      { mode: '2pass-offline', text: 'offline#1 2000-3000', wav_name: 'two', is_final: true, is_end: true },
    ]);
    expect(recognizer.calls.map((c) => `${c.pass}#${c.segment} ${c.fromMs}-${c.toMs} ${c.final}`)).toEqual([
      'online#0 500-1100 false',
      'online#0 1100-1200 true',
      'offline#0 500-1200 true',
      'online#1 2000-2600 false',
      'online#1 2600-3000 true',
      'offline#1 2000-3000 true',
    ]);
  });

  it('defaults to 2pass, wav_name "microphone", [5, 10, 5], itn on, and hands hotwords and settings to the recognizer', async () => {
    const recognizer = new ScriptedRecognizer();
    const log = await run([{ hotwords: '{"serve-fn": 20, "onnx": 10}', itn: false }, ...frames(1000), END], recognizer, [new ScriptedVad([['start', 0, 300]])]);
    expect(replies(log).map((r) => [r.mode, r.wav_name])).toEqual([['2pass-online', 'microphone'], ['2pass-offline', 'microphone']]);
    expect(recognizer.options[0]).toEqual({
      pass: 'online', final: false, segment: 0, startMs: 0, chunkSize: [5, 10, 5], itn: false, wavName: 'microphone',
      hotwords: [{ word: 'serve-fn', weight: 20 }, { word: 'onnx', weight: 10 }],
    });
  });
});

describe('funAsrSession, one connection', () => {
  it('runs utterances one after another, each with its own VAD and positions from zero', async () => {
    const recognizer = new ScriptedRecognizer();
    const log = await run(
      [{ mode: 'offline', wav_name: 'one' }, ...frames(1000), END, { mode: 'offline', wav_name: 'two' }, ...frames(800), END],
      recognizer,
      [new ScriptedVad([['start', 100, 400]]), new ScriptedVad([['start', 200, 500], ['end', 700, 800]])],
    );
    expect(replies(log)).toEqual([
      { mode: 'offline', text: 'offline#0 100-1000', wav_name: 'one', is_final: true },
      { mode: 'offline', text: 'offline#0 200-700', wav_name: 'two', is_final: false },
      { mode: 'offline', text: '', wav_name: 'two', is_final: true },
    ]);
  });

  it('joins 16-bit samples split across frames', async () => {
    const recognizer = new ScriptedRecognizer();
    const audio = pcm(0, 500);
    const odd = [audio.subarray(0, 1001), audio.subarray(1001, 1002), audio.subarray(1002, 5003), audio.subarray(5003)];
    const log = await run([{ mode: 'offline', wav_name: 'odd' }, ...odd, END], recognizer, [new ScriptedVad([['start', 0, 100]])]);
    expect(replies(log)).toEqual([{ mode: 'offline', text: 'offline#0 0-500', wav_name: 'odd', is_final: true }]);
  });

  it('accepts {"is_speaking": true} while speaking', async () => {
    const log = await run([{ mode: 'offline', wav_name: 'x' }, pcm(0, 100), { is_speaking: true }, pcm(100, 100), END], new ScriptedRecognizer(), [new ScriptedVad([['start', 0, 0]])]);
    expect(replies(log)).toEqual([{ mode: 'offline', text: 'offline#0 0-200', wav_name: 'x', is_final: true }]);
  });
});

describe('funAsrSession protocol errors (400)', () => {
  async function failure(messages: (FunAsrMessage | Uint8Array)[]): Promise<ServeFnError> {
    try {
      await run(messages, new ScriptedRecognizer(), messages[0] instanceof Uint8Array || messages[0].is_speaking === false ? [] : [new ScriptedVad([])]);
    } catch (err) {
      expect(err).toBeInstanceOf(ServeFnError);
      return err as ServeFnError;
    }
    throw new Error('expected the session to fail');
  }
  const cases: [string, (FunAsrMessage | Uint8Array)[], string][] = [
    ['audio before the configuration', [pcm(0, 10)], 'audio arrived before the configuration frame; send {"mode": ...} first'],
    ['an end with no utterance', [{ is_speaking: false }], '{"is_speaking": false} arrived with no utterance open; send the configuration frame first'],
    ['a second configuration', [{ mode: 'online' }, pcm(0, 10), { mode: 'offline' }], "'mode' can only be set by the configuration frame; end the utterance first"],
    ['8 kHz audio', [{ mode: 'online', audio_fs: 8000 }], 'audio_fs 8000 is not supported; send 16000 Hz PCM (resample on the client)'],
    ['a compressed format', [{ mode: 'offline', wav_format: 'mp3' }], `wav_format 'mp3' is not supported; send raw 16-bit PCM ("pcm")`],
  ];
  it.each(cases)('rejects %s', async (_, messages, reason) => {
    const err = await failure(messages);
    expect([err.code, err.statusCode, err.message]).toEqual(['SF_ERR_BAD_REQUEST', 400, `FunASR protocol: ${reason}.`]);
    // The transport closes the socket with this message as the reason, which WebSocket limits to 123 bytes.
    expect(Buffer.byteLength(err.message)).toBeLessThanOrEqual(123);
  });
});

describe('parseHotwords', () => {
  it('reads the weighted JSON form and the plain form', () => {
    expect(parseHotwords('{"阿里巴巴":20,"通义实验室":30}')).toEqual([{ word: '阿里巴巴', weight: 20 }, { word: '通义实验室', weight: 30 }]);
    expect(parseHotwords(' serve-fn  onnx ')).toEqual([{ word: 'serve-fn' }, { word: 'onnx' }]);
    expect(parseHotwords('{not json')).toEqual([{ word: '{not' }, { word: 'json' }]);
  });
});
