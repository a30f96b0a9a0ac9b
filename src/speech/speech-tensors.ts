import { CHUNK_SIZE_INPUT, STREAM_IDLE_MICROSECONDS } from './paraformer-online-config.js';

/**
 * The KServe v2 face of every speech model (one per folder), as a Triton config.pbtxt would declare
 * it. Shaped after FunASR's own Triton SenseVoice ensemble (runtime/triton_gpu/
 * model_repo_sense_voice_small: WAV in, TRANSCRIPTS out), but taking the audio file's bytes rather
 * than padded float samples, so requests of any length share a batch:
 * - AUDIO (BYTES [1]): a WAV file; or, with a SAMPLE_RATE above 0, raw 16-bit little-endian PCM at that rate
 *   (what FunASR's WebSocket clients send);
 * - SAMPLE_RATE (INT32 [1], optional), LANGUAGE (BYTES [1], optional: SenseVoice's `auto`, `zh`,
 *   `en`, ...; FunASR's svs_lang), ITN (BOOL [1], optional, default true; FunASR's svs_itn);
 * - TRANSCRIPT (BYTES [1]): the text; RESULT (BYTES [1]): the whole Transcription as JSON.
 */
export const SPEECH_INPUTS = { audio: 'AUDIO', sampleRate: 'SAMPLE_RATE', language: 'LANGUAGE', itn: 'ITN' } as const;
export const SPEECH_OUTPUTS = { transcript: 'TRANSCRIPT', result: 'RESULT' } as const;

/** Most utterances in one forward pass (Triton's max_batch_size; FunASR's Triton ensemble takes 16). */
export const SPEECH_MAX_BATCH = 8;

/** How long a forward pass waits for more utterances, or for the chunks of more streams, to share it (µs). */
export const SPEECH_QUEUE_DELAY_US = 2000;

/** config.pbtxt text of a speech model, for the repository's parser and /v2/models/{m}/config. */
export function speechModelConfig(name: string, options: { readonly maxAudioSeconds: number; readonly quantize: boolean; readonly instances: number; readonly maxBatchSize: number; readonly maxQueueDelayUs?: number; readonly streaming?: boolean; readonly device?: { readonly kind: 'cpu' | 'npu'; readonly id: number } }): string {
  const delay = options.maxQueueDelayUs ?? SPEECH_QUEUE_DELAY_US;
  const input = (n: string, type: string, optional: boolean): string => `input { name: "${n}" data_type: ${type} dims: [ 1 ]${optional ? ' optional: true' : ''} }`;
  return [
    `name: "${name}"`,
    'backend: "serve-fn"',
    `max_batch_size: ${options.maxBatchSize}`,
    input(SPEECH_INPUTS.audio, 'TYPE_STRING', false),
    input(SPEECH_INPUTS.sampleRate, 'TYPE_INT32', true),
    input(SPEECH_INPUTS.language, 'TYPE_STRING', true),
    input(SPEECH_INPUTS.itn, 'TYPE_BOOL', true),
    // A streaming Paraformer's chunk_size, read at the START of a stream (paraformer-online-instance-model.ts).
    ...(options.streaming ? [`input { name: "${CHUNK_SIZE_INPUT}" data_type: TYPE_INT32 dims: [ 3 ] optional: true }`] : []),
    `output { name: "${SPEECH_OUTPUTS.transcript}" data_type: TYPE_STRING dims: [ 1 ] }`,
    `output { name: "${SPEECH_OUTPUTS.result}" data_type: TYPE_STRING dims: [ 1 ] }`,
    // Whole utterances arrive one by one; a short wait lets concurrent ones share a forward pass.
    // A stream's chunks go, in order, to the instance holding its state: Triton's sequence batcher,
    // whose direct strategy waits as long for every stream on the instance to have its chunk ready,
    // so the chunks of concurrent streams run as the rows of one pass (paraformer-online.ts).
    options.streaming
      ? `sequence_batching { max_sequence_idle_microseconds: ${STREAM_IDLE_MICROSECONDS} direct { max_queue_delay_microseconds: ${delay} minimum_slot_utilization: 1.0 } }`
      : `dynamic_batching { max_queue_delay_microseconds: ${delay} }`,
    `instance_group { count: ${options.instances} kind: KIND_CPU }`,
    `parameters { key: "max_audio_seconds" value: { string_value: "${options.maxAudioSeconds}" } }`,
    `parameters { key: "quantize" value: { string_value: "${options.quantize}" } }`,
    // --device: which file of the folder the instance serves (speech-folder.ts speechModelFile), and a model.om's NPU.
    ...(options.device ? [`parameters { key: "device" value: { string_value: "${options.device.kind}" } }`, `parameters { key: "npu_device" value: { string_value: "${options.device.id}" } }`] : []),
  ].join('\n');
}
