import wavefile from 'wavefile';
import { createError } from 'serve-fn';

/** Silero VAD runs at 16 kHz; other rates are resampled to it. */
export const VAD_SAMPLE_RATE = 16_000;
/** Ten minutes: longer recordings should be cut into pieces (or streamed) rather than sent whole. */
export const MAX_DURATION_S = 600;

/**
 * The encodings read here, by WAV format tag (Microsoft's WAVEFORMATEX): wavefile's bit-depth
 * codes for integer PCM (1, and 0xFFFE, WAVE_FORMAT_EXTENSIBLE) and IEEE float (3).
 */
const READABLE_DEPTHS: Readonly<Record<number, readonly string[]>> = { 1: ['8', '16', '24', '32'], 3: ['32f', '64'], 0xfffe: ['8', '16', '24', '32'] };

interface WavFormat {
  readonly audioFormat: number;
  readonly numChannels: number;
  readonly sampleRate: number;
  readonly blockAlign: number;
}

export interface DecodedAudio {
  /** Mono samples in [-1, 1] at VAD_SAMPLE_RATE. */
  readonly samples: Float32Array;
  readonly sourceSampleRate: number;
  readonly sourceChannels: number;
}

/**
 * Reads a WAV file (wavefile) into 16 kHz mono floats: channels averaged, other rates resampled
 * with wavefile's cubic interpolation and low-pass filter.
 */
export function decodeWav(bytes: Uint8Array): DecodedAudio {
  if (bytes.byteLength === 0) throw createError('SF_ERR_BAD_REQUEST', 'The audio file is empty (0 bytes).');
  let wav: InstanceType<typeof wavefile.WaveFile>;
  try {
    wav = new wavefile.WaveFile(bytes);
  } catch (err) {
    throw createError('SF_ERR_BAD_REQUEST', `The audio is not a readable WAV file (${(err as Error).message}); send a RIFF WAV file.`);
  }
  const fmt = wav.fmt as WavFormat;
  const data = wav.data as { samples: Uint8Array; chunkSize: number };
  // wavefile reads a header as written; every count below divides or multiplies by these.
  if (!READABLE_DEPTHS[fmt.audioFormat]?.includes(wav.bitDepth)) {
    throw createError('SF_ERR_BAD_REQUEST', `WAV encoding '${wav.bitDepth}' (format tag ${fmt.audioFormat}) is not supported; send PCM (8, 16, 24 or 32-bit) or IEEE float.`);
  }
  if (fmt.numChannels === 0) throw createError('SF_ERR_BAD_REQUEST', 'The WAV header gives 0 channels; a WAV file has at least one.');
  if (fmt.sampleRate < 8_000 || fmt.sampleRate > 192_000) {
    throw createError('SF_ERR_BAD_REQUEST', `WAV sample rate ${fmt.sampleRate} Hz is out of range; send 8 kHz to 192 kHz.`);
  }
  const frameBytes = fmt.numChannels * Math.ceil(Number.parseInt(wav.bitDepth, 10) / 8);
  if (fmt.blockAlign !== frameBytes) {
    throw createError('SF_ERR_BAD_REQUEST', `The WAV header gives a block align of ${fmt.blockAlign} bytes; ${fmt.numChannels} channel(s) of ${wav.bitDepth}-bit samples take ${frameBytes}.`);
  }
  if (data.chunkSize > data.samples.byteLength) {
    throw createError('SF_ERR_BAD_REQUEST', `The WAV file is truncated: its data chunk declares ${data.chunkSize} bytes and holds ${data.samples.byteLength}.`);
  }
  if (data.samples.byteLength % frameBytes !== 0) {
    throw createError('SF_ERR_BAD_REQUEST', `The WAV data (${data.samples.byteLength} bytes) ends inside a frame; each frame is ${frameBytes} bytes.`);
  }
  const frames = data.samples.byteLength / frameBytes;
  if (frames === 0) throw createError('SF_ERR_BAD_REQUEST', 'The WAV file holds no audio samples.');
  if (frames / fmt.sampleRate > MAX_DURATION_S) {
    throw createError('SF_ERR_BAD_REQUEST', `The audio lasts ${Math.round(frames / fmt.sampleRate)} s; at most ${MAX_DURATION_S} s is accepted.`);
  }
  if (fmt.sampleRate !== VAD_SAMPLE_RATE) wav.toSampleRate(VAD_SAMPLE_RATE);
  const raw = wav.getSamples(false, Float32Array) as unknown as Float32Array | Float32Array[];
  const channels = Array.isArray(raw) ? raw : [raw];
  return { samples: downmix(channels, scaleOf(wav.bitDepth)), sourceSampleRate: fmt.sampleRate, sourceChannels: fmt.numChannels };
}

/** getSamples returns stored values: signed integers for PCM (unsigned for 8-bit), [-1, 1] for float. */
function scaleOf(bitDepth: string): { offset: number; divisor: number } {
  if (bitDepth.endsWith('f') || bitDepth === '64') return { offset: 0, divisor: 1 };
  const bits = Number.parseInt(bitDepth, 10);
  return bits === 8 ? { offset: 128, divisor: 128 } : { offset: 0, divisor: 2 ** (bits - 1) };
}

function downmix(channels: readonly Float32Array[], { offset, divisor }: { offset: number; divisor: number }): Float32Array {
  const out = new Float32Array(channels[0].length);
  const scale = 1 / (divisor * channels.length);
  for (const channel of channels) for (let i = 0; i < out.length; i++) out[i] += (channel[i] - offset) * scale;
  return out;
}
