/**
 * The tensors of the VAD and punctuation models a speech chain runs on the engine (speech-chain-instances.ts),
 * declared as Triton config.pbtxt text for the repository's parser:
 * - VAD, a stateful model under the sequence batcher (each sequence one audio stream): AUDIO (BYTES [1], raw
 *   16-bit PCM at SAMPLE_RATE > 0, or a WAV file), SAMPLE_RATE (INT32 [1]) → BOUNDARIES (BYTES [1], JSON
 *   `[{kind, ms}]`), and on the sequence's END request SEGMENTS (INT32 [n, 2]: FunASR's `[[start_ms, end_ms], ...]`) and PCM16K;
 * - punctuation: TEXT (BYTES [1]) → PUNCTUATED (BYTES [1]).
 */
export const CHAIN_TENSORS = {
  audio: 'AUDIO', sampleRate: 'SAMPLE_RATE', boundaries: 'BOUNDARIES', segments: 'SEGMENTS', pcm16k: 'PCM16K', text: 'TEXT', punctuated: 'PUNCTUATED',
} as const;

/** How long a VAD stream may sit without a request before its instance drops its state (ms). */
export const VAD_STREAM_IDLE_MS = 60_000;

const input = (n: string, type: string): string => `input { name: "${n}" data_type: ${type} dims: [ 1 ] }`;
const output = (n: string): string => `output { name: "${n}" data_type: TYPE_STRING dims: [ 1 ] }`;
const parameter = (key: string, value: string | number | boolean): string => `parameters { key: "${key}" value: { string_value: "${value}" } }`;

export function vadModelConfig(name: string, options: { readonly maxAudioSeconds: number; readonly quantize: boolean }): string {
  return [
    `name: "${name}"`,
    'backend: "serve-fn"',
    'max_batch_size: 0',
    input(CHAIN_TENSORS.audio, 'TYPE_STRING'),
    input(CHAIN_TENSORS.sampleRate, 'TYPE_INT32'),
    output(CHAIN_TENSORS.boundaries),
    `output { name: "${CHAIN_TENSORS.segments}" data_type: TYPE_INT32 dims: [ -1, 2 ] }`,
    output(CHAIN_TENSORS.pcm16k),
    // Triton's sequence batcher: a stream's requests run in order on the instance that holds its state.
    `sequence_batching { max_sequence_idle_microseconds: ${VAD_STREAM_IDLE_MS * 1000} }`,
    'instance_group { count: 1 kind: KIND_CPU }',
    parameter('max_audio_seconds', options.maxAudioSeconds),
    parameter('quantize', options.quantize),
    parameter('stream_idle_ms', VAD_STREAM_IDLE_MS),
  ].join('\n');
}

export function punctuationModelConfig(name: string, options: { readonly quantize: boolean; readonly maxBatchSize: number }): string {
  return [
    `name: "${name}"`,
    'backend: "serve-fn"',
    `max_batch_size: ${options.maxBatchSize}`,
    input(CHAIN_TENSORS.text, 'TYPE_STRING'),
    output(CHAIN_TENSORS.punctuated),
    'dynamic_batching { max_queue_delay_microseconds: 2000 }',
    'instance_group { count: 1 kind: KIND_CPU }',
    parameter('quantize', options.quantize),
  ].join('\n');
}
