import { createError } from '../../errors/index.js';
import type { FunAsrMessage, FunAsrReply } from './funasr-message.js';
import { FUNASR_SAMPLE_RATE, type FunAsrRecognizer, type Hotword } from './funasr-recognizer.js';
import { Utterance, type UtteranceConfig } from './funasr-utterance.js';
import type { StreamingVad } from './streaming-vad.js';

export interface FunAsrSessionOptions {
  readonly recognizer: FunAsrRecognizer;
  /** A new detector for each utterance, since each carries the recurrent state of its stream. */
  readonly createVad: () => StreamingVad;
}

/** FunASR's servers' defaults for fields the configuration frame leaves out. */
const DEFAULT_CONFIG: UtteranceConfig = { mode: '2pass', wavName: 'microphone', chunkSize: [5, 10, 5], hotwords: [], itn: true };
/** The fields that configure an utterance; once it runs, a text frame may only carry is_speaking / is_end. */
const CONFIG_FIELDS = ['mode', 'chunk_size', 'chunk_interval', 'wav_name', 'wav_format', 'audio_fs', 'hotwords', 'itn', 'svs_lang', 'svs_itn'] as const;

/**
 * The server side of FunASR's WebSocket protocol over any transport: text frames (already parsed
 * and validated as FunAsrMessage) and binary frames of 16-bit PCM in, result frames out. One
 * connection may carry several utterances one after another, each opened by a configuration frame
 * and closed by `{"is_speaking": false}`. Protocol violations throw 400 ServeFnErrors.
 */
export async function* funAsrSession(messages: AsyncIterable<FunAsrMessage | Uint8Array>, options: FunAsrSessionOptions): AsyncGenerator<FunAsrReply> {
  let utterance: Utterance | undefined;
  for await (const message of messages) {
    if (message instanceof Uint8Array) {
      if (!utterance) throw protocolError('audio arrived before the configuration frame; send {"mode": ...} first');
      yield* await utterance.accept(message);
    } else if (!utterance) {
      if (message.is_speaking === false) throw protocolError('{"is_speaking": false} arrived with no utterance open; send the configuration frame first');
      utterance = new Utterance(utteranceConfig(message), options.recognizer, options.createVad());
    } else if (message.is_speaking === false) {
      yield* await utterance.finish(message.is_end === true);
      utterance = undefined;
    } else {
      const field = CONFIG_FIELDS.find((f) => message[f] !== undefined);
      if (field) throw protocolError(`'${field}' can only be set by the configuration frame; end the utterance first`);
    }
  }
}

/** Reads a configuration frame, with FunASR's defaults for what it leaves out. */
function utteranceConfig(message: FunAsrMessage): UtteranceConfig {
  const fs = message.audio_fs ?? FUNASR_SAMPLE_RATE;
  if (fs !== FUNASR_SAMPLE_RATE) throw protocolError(`audio_fs ${fs} is not supported; send 16000 Hz PCM (resample on the client)`);
  const format = message.wav_format ?? 'pcm';
  if (format.toLowerCase() !== 'pcm') throw protocolError(`wav_format '${format}' is not supported; send raw 16-bit PCM ("pcm")`);
  return {
    mode: message.mode ?? DEFAULT_CONFIG.mode,
    wavName: message.wav_name ?? DEFAULT_CONFIG.wavName,
    chunkSize: message.chunk_size === undefined ? DEFAULT_CONFIG.chunkSize : chunkSize(message.chunk_size),
    hotwords: message.hotwords ? parseHotwords(message.hotwords) : DEFAULT_CONFIG.hotwords,
    itn: message.itn ?? DEFAULT_CONFIG.itn,
    ...(message.svs_lang === undefined ? {} : { svsLang: message.svs_lang }),
    ...(message.svs_itn === undefined ? {} : { svsItn: message.svs_itn }),
  };
}

function chunkSize(value: readonly number[] | string): [number, number, number] {
  const [back, chunk, ahead] = (typeof value === 'string' ? value.split(',') : value).map(Number);
  return [back, chunk, ahead];
}

/**
 * FunASR's two hotword forms: a JSON object of word → weight, or (when the string is no such
 * object) words separated by spaces.
 */
export function parseHotwords(text: string): Hotword[] {
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    parsed = undefined;
  }
  if (parsed !== null && typeof parsed === 'object' && !Array.isArray(parsed)) {
    return Object.entries(parsed).map(([word, weight]) => (typeof weight === 'number' ? { word, weight } : { word }));
  }
  return text.split(/\s+/).filter((w) => w !== '').map((word) => ({ word }));
}

function protocolError(reason: string): Error {
  return createError('SF_ERR_BAD_REQUEST', `FunASR protocol: ${reason}.`);
}
