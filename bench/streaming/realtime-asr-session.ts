import { setTimeout as sleep } from 'node:timers/promises';
import WebSocket from 'ws';
import type { FunAsrClientReply } from '../../examples/streaming-asr/client.js';

const SAMPLE_RATE = 16_000;
/** chunk_size [5, 10, 5] with chunk_interval 10: 600 ms chunks sent as 60 ms frames, as FunASR's client does. */
const CHUNK_SIZE = [5, 10, 5] as const;
const CHUNK_INTERVAL = 10;
export const FRAME_MS = (60 * CHUNK_SIZE[1]) / CHUNK_INTERVAL;
export const CHUNK_MS = 60 * CHUNK_SIZE[1];
const FRAME_SAMPLES = (FRAME_MS * SAMPLE_RATE) / 1000;
/** How long the final reply of the last utterance may take before the session counts as failed. */
const FINAL_REPLY_TIMEOUT_MS = 10_000;
/**
 * The example's recognizer (SegmentFactsRecognizer) states the span it was handed in utterance time,
 * `[chunk 0.51–1.11 s, -20 dBFS]` or `[speech 0.51–3.61 s, ...]`: that span is what ties a reply to
 * the audio frames that made it possible.
 */
const SEGMENT_FACTS = /^\[(chunk|speech) (\d+\.\d+)–(\d+\.\d+) s,/;
/** The recognizer prints seconds with two decimals, so a span's end is known to ±5 ms = ±80 samples. */
const SPAN_END_UNCERTAINTY_SAMPLES = 80;

export interface RealtimeSessionOptions {
  readonly url: string;
  readonly pcm: Uint8Array;
  readonly mode: 'online' | '2pass';
  readonly durationS: number;
  /** performance.now() at which the first frame is due. */
  readonly startAt: number;
  readonly name: string;
}

export interface RealtimeSessionResult {
  /**
   * Online (or 2pass-online) partials of full 600 ms chunks, ms: reply arrival − send time of the
   * frame holding the chunk's last sample. Silero reads 32 ms windows, so a chunk ending late in a
   * frame may only be seen with the next one: up to one frame (60 ms) of this is the protocol's.
   */
  readonly partialMs: number[];
  /**
   * Segment results, ms: reply arrival − send time of the frame holding the segment's last sample.
   * The 2pass-offline reply in 2pass; in online mode the segment's closing (shorter) chunk. Both wait
   * for the VAD to see the end of speech (500 ms of silence), so that wait is part of this figure.
   */
  readonly segmentEndMs: number[];
  /** End frame `{"is_speaking": false}` sent → that utterance's is_final reply, ms. */
  readonly finalMs: number[];
  /** Largest delay of a frame's send behind its real-time schedule, ms: the load generator's own lag. */
  readonly maxSendLagMs: number;
  readonly utterances: number;
  /** Replies whose span ends within the text's rounding of a frame boundary, so their frame may be off by one. */
  readonly ambiguous: number;
  readonly errors: string[];
}

/** What a session fills in as frames go out and replies come in. */
type Tally = { -readonly [K in keyof RealtimeSessionResult]: RealtimeSessionResult[K] };

interface UtteranceTimes {
  /** performance.now() at which each frame of the utterance was handed to the socket. */
  readonly frameSentAt: number[];
  endSentAt?: number;
  finalAt?: number;
}

/**
 * One client streaming `pcm` over and over as consecutive utterances of one connection (a FunASR
 * session may carry several), each opened by its configuration frame and closed by
 * `{"is_speaking": false}`, with frames sent on a fixed real-time schedule from `startAt` until
 * `durationS` of audio is sent. The last utterance is cut there; the adapter closes its open segment
 * at the end frame. Utterances are told apart by wav_name.
 */
export async function runRealtimeSession(options: RealtimeSessionOptions): Promise<RealtimeSessionResult> {
  const result: Tally = { partialMs: [], segmentEndMs: [], finalMs: [], maxSendLagMs: 0, utterances: 0, ambiguous: 0, errors: [] };
  const utterances: UtteranceTimes[] = [];
  const socket = new WebSocket(options.url, ['binary']);
  let lastFinal!: () => void;
  const done = new Promise<void>((resolve) => (lastFinal = resolve));
  let sending = true;
  let closing = false;
  socket.on('message', (data, isBinary) => {
    const at = performance.now();
    if (isBinary) return;
    const reply = JSON.parse(String(data)) as FunAsrClientReply & { error?: string };
    if (reply.error !== undefined) return void result.errors.push(reply.error);
    const utterance = utterances[Number(reply.wav_name.slice(reply.wav_name.lastIndexOf('#') + 1))];
    if (!utterance) return void result.errors.push(`a reply for an unknown utterance '${reply.wav_name}'`);
    recordReply(result, utterance, reply, at);
    if (reply.is_final && utterance === utterances.at(-1) && !sending) lastFinal();
  });
  const closed = new Promise<void>((resolve) => socket.on('close', (code, reason) => {
    if (!closing) result.errors.push(`closed by the server (${code} ${String(reason)})`);
    resolve();
  }));
  socket.on('error', (err) => result.errors.push(err.message));
  await new Promise<void>((resolve) => {
    socket.once('open', resolve);
    socket.once('close', resolve);
  });
  if (socket.readyState !== WebSocket.OPEN) return result;

  const totalFrames = Math.ceil((options.durationS * 1000) / FRAME_MS);
  const framesPerPass = Math.ceil(options.pcm.length / (2 * FRAME_SAMPLES));
  for (let frame = 0; frame < totalFrames && socket.readyState === WebSocket.OPEN; frame++) {
    const inPass = frame % framesPerPass;
    if (inPass === 0) {
      utterances.push({ frameSentAt: [] });
      socket.send(JSON.stringify({
        mode: options.mode, chunk_size: CHUNK_SIZE, chunk_interval: CHUNK_INTERVAL, wav_name: `${options.name}#${utterances.length - 1}`,
        wav_format: 'pcm', audio_fs: SAMPLE_RATE, is_speaking: true, itn: true,
      }));
    }
    const due = options.startAt + frame * FRAME_MS;
    // Paced against the clock rather than by fixed sleeps, so timer slack does not add up.
    await sleep(Math.max(0, due - performance.now()));
    const now = performance.now();
    result.maxSendLagMs = Math.max(result.maxSendLagMs, now - due);
    socket.send(options.pcm.subarray(inPass * 2 * FRAME_SAMPLES, (inPass + 1) * 2 * FRAME_SAMPLES));
    utterances.at(-1)!.frameSentAt.push(now);
    if (inPass === framesPerPass - 1 || frame === totalFrames - 1) {
      socket.send(JSON.stringify({ is_speaking: false }));
      utterances.at(-1)!.endSentAt = performance.now();
    }
  }
  sending = false;
  if (utterances.at(-1)?.finalAt !== undefined) lastFinal();
  const timer = new AbortController();
  const timeout = sleep(FINAL_REPLY_TIMEOUT_MS, true, { signal: timer.signal }).catch(() => false);
  const timedOut = await Promise.race([done.then(() => false), closed.then(() => false), timeout]);
  timer.abort();
  if (timedOut) result.errors.push(`no final reply within ${FINAL_REPLY_TIMEOUT_MS} ms of the last end frame`);
  closing = true;
  socket.close(1000);
  await closed;
  const missing = utterances.filter((u) => u.finalAt === undefined).length;
  if (missing > 0 && !timedOut) result.errors.push(`${missing} utterance(s) without a final reply`);
  return { ...result, utterances: utterances.length };
}

function recordReply(result: Tally, utterance: UtteranceTimes, reply: FunAsrClientReply, at: number): void {
  if (reply.is_final) {
    utterance.finalAt = at;
    if (utterance.endSentAt !== undefined) result.finalMs.push(at - utterance.endSentAt);
  }
  if (reply.text === '') return;
  const facts = SEGMENT_FACTS.exec(reply.text);
  if (!facts) return void result.errors.push(`unexpected reply text '${reply.text}'`);
  const endSample = Math.round(Number(facts[3]) * SAMPLE_RATE);
  const phase = endSample % FRAME_SAMPLES;
  // A span cut by the end frame ends with the audio sent, in the last frame, whatever its phase.
  const sentSamples = utterance.frameSentAt.length * FRAME_SAMPLES;
  const atEnd = utterance.endSentAt !== undefined && endSample >= sentSamples - SPAN_END_UNCERTAINTY_SAMPLES;
  if (!atEnd && (phase < SPAN_END_UNCERTAINTY_SAMPLES || phase > FRAME_SAMPLES - SPAN_END_UNCERTAINTY_SAMPLES)) result.ambiguous++;
  const frame = atEnd ? utterance.frameSentAt.length - 1 : Math.floor((endSample - 1) / FRAME_SAMPLES);
  const sentAt = utterance.frameSentAt[frame];
  if (sentAt === undefined) return void result.errors.push(`a reply for audio not sent yet: '${reply.text}'`);
  const fullChunk = facts[1] === 'chunk' && Number(facts[3]) - Number(facts[2]) >= (CHUNK_MS - 5) / 1000;
  (fullChunk ? result.partialMs : result.segmentEndMs).push(at - sentAt);
}
