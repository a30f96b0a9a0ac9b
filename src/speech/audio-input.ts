import wavefile from 'wavefile';
import { createError } from '../errors/index.js';
import { resample } from './resample.js';

/** The rate every FunASR model's front end takes (frontend_conf.fs). */
export const SPEECH_SAMPLE_RATE = 16_000;

/** What audio a speech model accepts; past them a request is refused with a 4xx naming the limit. */
export interface AudioLimits {
  /** Longest audio, in seconds (--max-audio-seconds); an ASR folder without a VAD decodes it in one piece. */
  readonly maxSeconds: number;
  /** Highest sample rate taken; 8–48 kHz covers telephone to studio audio. */
  readonly maxSampleRate: number;
  readonly minSampleRate: number;
}

export const DEFAULT_AUDIO_LIMITS: AudioLimits = Object.freeze({ maxSeconds: 600, maxSampleRate: 48_000, minSampleRate: 8_000 });

/** Mono samples in [-1, 1] at SPEECH_SAMPLE_RATE, and what they came from. */
export interface SpeechAudio {
  readonly samples: Float32Array;
  readonly sourceRate: number;
  readonly seconds: number;
}

/**
 * Decodes a WAV file (PCM 8–32 bit, float, A-law, mu-law: what wavefile reads), mixes it to mono
 * by averaging its channels (librosa's `mono=True`, which funasr_onnx loads audio with) and
 * resamples it to 16 kHz over the whole file at once (resample.ts). Other containers (mp3, flac, ogg) need a decoder serve-fn does not
 * ship: they are refused with a 400 that says so.
 */
export function decodeAudioFile(bytes: Uint8Array, limits: AudioLimits = DEFAULT_AUDIO_LIMITS): SpeechAudio {
  if (bytes.length === 0) throw audioError('the file is empty');
  if (!isWav(bytes)) throw audioError('it is not a WAV file (RIFF/WAVE); serve-fn decodes WAV only: convert it first, e.g. `ffmpeg -i in.mp3 -ar 16000 -ac 1 out.wav`');
  let wav: wavefile.WaveFile;
  try {
    wav = new wavefile.WaveFile(bytes);
  } catch (err) {
    throw audioError(`the WAV file could not be read (${(err as Error).message})`, err);
  }
  // Copied out: toBitDepth rebuilds wav.fmt in place.
  const { numChannels, sampleRate } = wav.fmt as { numChannels: number; sampleRate: number };
  if (!(numChannels >= 1)) throw audioError('the WAV file has no channels');
  checkRate(sampleRate, limits);
  const frames = (wav.data as { chunkSize: number }).chunkSize / ((numChannels * Number.parseInt(wav.bitDepth, 10)) / 8 || 1);
  checkLength(frames / sampleRate, limits);
  const channels = toUnitScale(wav, numChannels);
  const mono = mixToMono(channels);
  if (mono.length === 0) throw audioError('the WAV file holds no samples');
  return toSpeechRate(mono, sampleRate, limits);
}

/** 16-bit little-endian PCM (FunASR's WebSocket and HTTP audio) at `rate`, as speech audio. */
export function decodePcm16(bytes: Uint8Array, rate: number, limits: AudioLimits = DEFAULT_AUDIO_LIMITS): SpeechAudio {
  checkRate(rate, limits);
  const count = Math.floor(bytes.length / 2);
  checkLength(count / rate, limits);
  const view = new DataView(bytes.buffer, bytes.byteOffset, count * 2);
  const samples = new Float32Array(count);
  for (let i = 0; i < count; i++) samples[i] = view.getInt16(2 * i, true) / 32768;
  return toSpeechRate(samples, rate, limits);
}

/** Resamples a whole utterance to 16 kHz (resample.ts), never chunk by chunk, so no seams. */
export function toSpeechRate(samples: Float32Array, rate: number, limits: AudioLimits = DEFAULT_AUDIO_LIMITS): SpeechAudio {
  checkRate(rate, limits);
  checkLength(samples.length / rate, limits);
  if (rate === SPEECH_SAMPLE_RATE) return { samples, sourceRate: rate, seconds: samples.length / rate };
  return { samples: resample(samples, rate, SPEECH_SAMPLE_RATE), sourceRate: rate, seconds: samples.length / rate };
}

/**
 * The samples in [-1, 1] as torchaudio and soundfile scale them: integers over 2^(bits−1), 8-bit
 * unsigned around 128. Not wavefile's toBitDepth('32f'), which divides positive and negative
 * values by different powers and so shifts quiet frames' energies by a fraction of a percent.
 */
function toUnitScale(wav: wavefile.WaveFile, numChannels: number): Float32Array[] {
  if (wav.bitDepth === '8a') wav.fromALaw();
  else if (wav.bitDepth === '8m') wav.fromMuLaw();
  else if (wav.bitDepth === '4') wav.fromIMAADPCM();
  const depth = wav.bitDepth;
  const raw = wav.getSamples(false, Float64Array) as unknown as Float64Array | Float64Array[];
  const perChannel = numChannels === 1 ? [raw as Float64Array] : (raw as Float64Array[]);
  const float = depth === '32f' || depth === '64';
  const bits = Number.parseInt(depth, 10);
  const offset = depth === '8' ? 128 : 0;
  const scale = float ? 1 : 2 ** (bits - 1);
  return perChannel.map((channel) => Float32Array.from(channel, (v) => (v - offset) / scale));
}

function mixToMono(channels: readonly Float32Array[]): Float32Array {
  if (channels.length === 1) return channels[0];
  const out = new Float32Array(channels[0].length);
  for (const channel of channels) for (let i = 0; i < out.length; i++) out[i] += channel[i] / channels.length;
  return out;
}

function isWav(bytes: Uint8Array): boolean {
  if (bytes.length < 12) return false;
  const tag = (at: number): string => String.fromCharCode(...bytes.subarray(at, at + 4));
  return ['RIFF', 'RIFX', 'RF64'].includes(tag(0)) && tag(8) === 'WAVE';
}

function checkRate(rate: number, limits: AudioLimits): void {
  if (!Number.isFinite(rate) || rate < limits.minSampleRate || rate > limits.maxSampleRate) {
    throw audioError(`its sample rate ${rate} Hz is outside ${limits.minSampleRate}–${limits.maxSampleRate} Hz`);
  }
}

function checkLength(seconds: number, limits: AudioLimits): void {
  if (seconds > limits.maxSeconds) throw createError('SF_ERR_AUDIO_TOO_LONG', seconds.toFixed(1), String(limits.maxSeconds));
}

function audioError(reason: string, cause?: unknown): Error {
  return createError('SF_ERR_AUDIO_INVALID', reason, ...(cause === undefined ? [] : [{ cause }]));
}
