import { availableParallelism } from 'node:os';
import type { ModelContext } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type ExecuteRequest, type ExecuteResponse, type TensorModel } from '../instance/tensor-model-api.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { DEFAULT_AUDIO_LIMITS, SPEECH_SAMPLE_RATE, decodeAudioFile, decodePcm16, type AudioLimits } from './audio-input.js';
import { paraformerSentence } from './paraformer-decoder.js';
import { DEFAULT_CHUNK_SIZE, ParaformerOnline, type ChunkSize, type ParaformerOnlineStream } from './paraformer-online.js';
import { CHUNK_SIZE_INPUT, STREAM_IDLE_MICROSECONDS } from './paraformer-online-config.js';
import { readSpeechFolder } from './speech-folder.js';
import { SPEECH_INPUTS, SPEECH_OUTPUTS } from './speech-tensors.js';
import type { Transcription } from './transcription.js';

/** One request's share of an execution: its stream and the audio it brings. */
interface ChunkWork {
  readonly key: string;
  /** The request ENDs its stream, whose state is dropped once it ran. */
  readonly end: boolean;
  readonly stream: ParaformerOnlineStream;
  readonly pieces: readonly { readonly samples: Float32Array; readonly final: boolean }[];
  readonly seconds: number;
}

/** FunASR's chunk unit: one LFR frame, 60 ms of 16 kHz audio. */
const SAMPLES_PER_CHUNK_UNIT = 960;

/**
 * A streaming Paraformer folder inside its instance's thread, a stateful model under Triton's
 * sequence batcher (its generated config has `sequence_batching`): every request of a stream comes
 * to this instance in order, and the stream's state (ParaformerOnlineStream) is kept here, keyed by
 * the request's correlation id, from its START request to its END one. A request of a stream is a
 * chunk of 16-bit PCM at 16 kHz (resampling chunk by chunk would leave seams); its TRANSCRIPT is the
 * words the chunk completes. A request that is START and END at once is a whole utterance, which may
 * be a WAV file or PCM at any rate (resampled whole), decoded chunk by chunk as a stream would be.
 */
export default class ParaformerOnlineInstanceModel implements TensorModel {
  private model?: ParaformerOnline;
  private limits: AudioLimits = DEFAULT_AUDIO_LIMITS;
  private readonly streams = new Map<string, { stream: ParaformerOnlineStream; lastUsed: number }>();
  private idleMs = STREAM_IDLE_MICROSECONDS / 1000;
  private modelName = '';

  async initialize(ctx: ModelContext): Promise<void> {
    const parameter = (key: string): string | undefined => ((ctx.config.parameters as Record<string, { string_value?: string }> | undefined)?.[key])?.string_value;
    this.modelName = ctx.modelName;
    const folder = readSpeechFolder(ctx.modelDir, { quantize: parameter('quantize') === 'true' });
    this.limits = { ...DEFAULT_AUDIO_LIMITS, maxSeconds: Number(parameter('max_audio_seconds') ?? DEFAULT_AUDIO_LIMITS.maxSeconds) };
    const idleUs = (ctx.config.sequence_batching as { max_sequence_idle_microseconds?: number } | undefined)?.max_sequence_idle_microseconds;
    if (idleUs) this.idleMs = idleUs / 1000;
    const threads = Math.max(1, Math.floor(availableParallelism() / ctx.instanceCount));
    const options = { options: { intraOpNumThreads: threads } };
    this.model = new ParaformerOnline(folder, await ctx.loadModel(folder.modelFile, options), await ctx.loadModel(folder.streaming!.decoderFile, options));
  }

  /**
   * The requests of one execution are chunks of different streams (the sequence batcher sends at
   * most one request per sequence): their forward passes run as rows of one encoder and decoder
   * call (ParaformerOnline.acceptChunks). A request that is refused (no live stream, bad PCM)
   * fails alone; the others still run.
   */
  async execute(requests: readonly ExecuteRequest[]): Promise<ExecuteResponse[]> {
    const responses: (ExecuteResponse | undefined)[] = [];
    const chunks: { index: number; chunk: ChunkWork }[] = [];
    requests.forEach((request, index) => {
      try {
        chunks.push({ index, chunk: this.chunk(request) });
      } catch (error) {
        responses[index] = { error: error as Error };
      }
    });
    try {
      const pieces = await this.model!.acceptChunks(chunks.map(({ chunk }) => chunk));
      chunks.forEach(({ index, chunk }, i) => (responses[index] = this.respond({ text: paraformerSentence(pieces[i]).text, richText: '', duration: chunk.seconds })));
    } catch (error) {
      for (const { index } of chunks) responses[index] = { error: error as Error };
    } finally {
      for (const { chunk } of chunks) if (chunk.end) this.streams.delete(chunk.key);
    }
    return responses as ExecuteResponse[];
  }

  /** A request's stream and its audio, split into the model's chunks when it is a whole utterance. */
  private chunk(request: ExecuteRequest): ChunkWork {
    const model = this.model!;
    const start = (request.flags & REQUEST_FLAG_SEQUENCE_START) !== 0;
    const end = (request.flags & REQUEST_FLAG_SEQUENCE_END) !== 0;
    const key = String(request.correlationId);
    const bytes = (request.input(SPEECH_INPUTS.audio)!.data as Uint8Array[])[0];
    const rate = Number((request.input(SPEECH_INPUTS.sampleRate)?.data as Int32Array | undefined)?.[0] ?? 0);
    if (start) {
      this.evictIdle();
      this.streams.set(key, { stream: model.newStream(chunkSize(request)), lastUsed: Date.now() });
    }
    const entry = this.streams.get(key);
    if (!entry) throw createError('SF_ERR_SEQUENCE_NOT_STARTED', key, this.modelName, this.idleMs * 1000);
    entry.lastUsed = Date.now();
    try {
      if (start && end) return this.wholeUtterance(key, entry.stream, bytes, rate);
      if (rate !== SPEECH_SAMPLE_RATE) throw createError('SF_ERR_AUDIO_INVALID', `a chunk of a stream must be 16-bit PCM at ${SPEECH_SAMPLE_RATE} Hz (SAMPLE_RATE ${SPEECH_SAMPLE_RATE}); resample the whole stream on the client, or send the whole utterance as one request`);
      const audio = decodePcm16(bytes, rate, this.limits);
      return { key, end, stream: entry.stream, pieces: [{ samples: audio.samples, final: end }], seconds: audio.seconds };
    } catch (error) {
      if (end) this.streams.delete(key);
      throw error;
    }
  }

  /** A whole utterance, cut into chunk_size pieces as a stream would send them. */
  private wholeUtterance(key: string, stream: ParaformerOnlineStream, bytes: Uint8Array, rate: number): ChunkWork {
    const audio = rate > 0 ? decodePcm16(bytes, rate, this.limits) : decodeAudioFile(bytes, this.limits);
    const size = stream.chunkSize[1] * SAMPLES_PER_CHUNK_UNIT;
    const pieces: { samples: Float32Array; final: boolean }[] = [];
    for (let at = 0; at < audio.samples.length; at += size) pieces.push({ samples: audio.samples.subarray(at, at + size), final: at + size >= audio.samples.length });
    return { key, end: true, stream, pieces, seconds: audio.seconds };
  }

  private respond(result: Transcription): ExecuteResponse {
    const encoder = new TextEncoder();
    const full = { ...result, richText: result.text };
    return {
      outputs: [
        createTensor(SPEECH_OUTPUTS.transcript, 'BYTES', [1, 1], [encoder.encode(full.text)]),
        createTensor(SPEECH_OUTPUTS.result, 'BYTES', [1, 1], [encoder.encode(JSON.stringify(full))]),
      ],
    };
  }

  /**
   * Streams whose sequence the batcher has expired (idle past max_sequence_idle_microseconds) never get
   * an END: a KServe v2 client's stream it abandoned, or a FunASR client connected but silent. A
   * FunASR client that disconnects has its stream ended at once by the WebSocket route.
   */
  private evictIdle(): void {
    const now = Date.now();
    for (const [key, { lastUsed }] of this.streams) if (now - lastUsed > this.idleMs) this.streams.delete(key);
  }
}

function chunkSize(request: ExecuteRequest): ChunkSize {
  const input = request.input(CHUNK_SIZE_INPUT);
  if (!input) return DEFAULT_CHUNK_SIZE;
  const [back, chunk, ahead] = Array.from(input.data as Int32Array, Number);
  if (![back, chunk, ahead].every((n) => Number.isInteger(n) && n >= 0 && n <= 100) || chunk === 0) {
    throw createError('SF_ERR_AUDIO_INVALID', `CHUNK_SIZE must be three integers 0–100, the middle one positive, as FunASR's chunk_size [5, 10, 5] (got ${[back, chunk, ahead].join(', ')})`);
  }
  return [back, chunk, ahead];
}
