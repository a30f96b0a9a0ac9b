import type { FrontEndConfig } from './speech-front-end.js';

/**
 * What a streaming Paraformer export's config.yaml says about its two ONNX files, read as
 * funasr_onnx's `paraformer_online_bin.Paraformer` reads it (FunASR
 * runtime/python/onnxruntime/funasr_onnx/paraformer_online_bin.py): the encoder's output size (the
 * width of `enc`, the CIF hidden state and each decoder FSMN cache), the decoder's blocks (one
 * `in_cache_i` each) and kernel (each cache keeps kernel_size − 1 frames), and the CIF predictor's
 * firing and tail thresholds.
 */
export interface StreamingParaformerConfig {
  readonly decoderFile: string;
  readonly outputSize: number;
  readonly decoderBlocks: number;
  /** decoder_conf.kernel_size − 1: the frames each decoder FSMN cache keeps. */
  readonly fsmnLorder: number;
  readonly cifThreshold: number;
  readonly tailThreshold: number;
  /** Width of a feature frame: n_mels × lfr_m. */
  readonly featureDim: number;
}

/** FunASR's streaming Paraformer template (funasr/models/paraformer_streaming/template.yaml). */
const TEMPLATE = { outputSize: 512, decoderBlocks: 16, kernelSize: 11, threshold: 1.0, tailThreshold: 0.45 };

export function streamingParaformerConfig(config: Record<string, unknown>, decoderFile: string, frontEnd: FrontEndConfig, fail: (why: string) => Error): StreamingParaformerConfig {
  const section = (key: string): Record<string, unknown> => (config[key] ?? {}) as Record<string, unknown>;
  const number = (key: string, field: string, fallback: number, integer: boolean): number => {
    const value = section(key)[field] ?? fallback;
    if (typeof value !== 'number' || !(value > 0) || (integer && !Number.isInteger(value))) throw fail(`${key}.${field} must be a positive ${integer ? 'integer' : 'number'} (got ${String(value)})`);
    return value;
  };
  const kernel = number('decoder_conf', 'kernel_size', TEMPLATE.kernelSize, true);
  if (kernel < 2) throw fail(`decoder_conf.kernel_size must be at least 2 (got ${kernel})`);
  return {
    decoderFile,
    outputSize: number('encoder_conf', 'output_size', TEMPLATE.outputSize, true),
    decoderBlocks: number('decoder_conf', 'num_blocks', TEMPLATE.decoderBlocks, true),
    fsmnLorder: kernel - 1,
    cifThreshold: number('predictor_conf', 'threshold', TEMPLATE.threshold, false),
    tailThreshold: number('predictor_conf', 'tail_threshold', TEMPLATE.tailThreshold, false),
    featureDim: frontEnd.numMelBins * frontEnd.lfrM,
  };
}

/** The streaming model's chunk size input: FunASR's `chunk_size` [look-back, chunk, look-ahead]. */
export const CHUNK_SIZE_INPUT = 'CHUNK_SIZE';

/**
 * A streaming Paraformer's sequence: a stream is idle-expired after a minute without a chunk
 * (Triton's max_sequence_idle_microseconds), which also bounds the state its instance keeps.
 */
export const STREAM_IDLE_MICROSECONDS = 60_000_000;
