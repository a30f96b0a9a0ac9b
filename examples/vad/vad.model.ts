import { Batch, createTensor, Endpoint, Model, Tensors, type ExecuteRequest, type ExecuteResponse, type ModelContext } from 'serve-fn';
import { SILERO_MODEL_FILE, SileroVad, WINDOW_SAMPLES } from './silero-vad.js';
import { DEFAULT_SEGMENT_OPTIONS, speechSegments, type SegmentOptions } from './speech-segments.js';
import { VadRequest, VadResponse } from './vad-dtos.js';
import { decodeWav, VAD_SAMPLE_RATE, type DecodedAudio } from './wav-decoder.js';

/**
 * Silero VAD: where in a WAV recording someone speaks. Its tensor interface (KServe v2 infer, gRPC
 * ModelInfer) takes the decoded 16 kHz mono samples and answers the speech probability of every
 * 512-sample window, for a client that places segments itself.
 */
@Model({ name: 'silero-vad', description: 'Silero VAD v5 speech segments' })
@Tensors({
  inputs: [{ name: 'AUDIO', datatype: 'FP32', dims: [-1] }],
  outputs: [{ name: 'PROBABILITIES', datatype: 'FP32', dims: [-1] }],
  maxBatchSize: 8,
})
export class SpeechDetector {
  private vad?: SileroVad;

  async initialize(ctx: ModelContext): Promise<void> {
    this.vad = new SileroVad(await ctx.loadModel(SILERO_MODEL_FILE, { options: { intraOpNumThreads: 1 } }));
  }

  @Endpoint('/vad', { body: VadRequest, consumes: 'multipart', response: VadResponse, summary: 'Find the speech segments of a WAV file' })
  @Batch(8, 5000)
  async detect(batch: VadRequest[]): Promise<(VadResponse | Error)[]> {
    const decoded = batch.map((request): DecodedAudio | Error => {
      try {
        return decodeWav(request.audio.data);
      } catch (err) {
        return err as Error;
      }
    });
    const readable = decoded.filter((d): d is DecodedAudio => !(d instanceof Error));
    const probabilities = await this.vad!.probabilities(readable.map((d) => d.samples));
    let next = 0;
    return decoded.map((audio, i) => {
      if (audio instanceof Error) return audio;
      const segments = speechSegments(probabilities[next++], WINDOW_SAMPLES, audio.samples.length, VAD_SAMPLE_RATE, segmentOptions(batch[i]));
      const ms = (samples: number): number => Math.round((samples * 1000) / VAD_SAMPLE_RATE);
      return { duration_ms: ms(audio.samples.length), segments: segments.map((s) => ({ start_ms: ms(s.start), end_ms: ms(s.end) })) };
    });
  }

  /** Each request's rows are recordings of one length; every recording of the batch steps through Silero together. */
  @Batch(8, 5000)
  async execute(requests: ExecuteRequest[]): Promise<ExecuteResponse[]> {
    const recordings = requests.flatMap((request) => {
      const audio = request.input('AUDIO')!;
      const [rows, samples] = audio.shape;
      const data = audio.data as Float32Array;
      return Array.from({ length: rows }, (_, row) => data.subarray(row * samples, (row + 1) * samples));
    });
    const probabilities = await this.vad!.probabilities(recordings);
    let next = 0;
    return requests.map((request) => {
      const rows = request.input('AUDIO')!.shape[0];
      const mine = probabilities.slice(next, (next += rows));
      const windows = mine[0]?.length ?? 0;
      const data = new Float32Array(rows * windows);
      mine.forEach((p, row) => data.set(p, row * windows));
      return { outputs: [createTensor('PROBABILITIES', 'FP32', [rows, windows], data)] };
    });
  }
}

function segmentOptions(request: VadRequest): SegmentOptions {
  const threshold = request.threshold ?? DEFAULT_SEGMENT_OPTIONS.threshold;
  return {
    threshold,
    negThreshold: Math.max(threshold - 0.15, 0.01),
    minSpeechMs: request.min_speech_ms ?? DEFAULT_SEGMENT_OPTIONS.minSpeechMs,
    minSilenceMs: request.min_silence_ms ?? DEFAULT_SEGMENT_OPTIONS.minSilenceMs,
    speechPadMs: request.speech_pad_ms ?? DEFAULT_SEGMENT_OPTIONS.speechPadMs,
  };
}
