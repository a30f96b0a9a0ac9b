import { availableParallelism } from 'node:os';
import type { BackendSession } from '../backends/backend.js';
import type { ModelContext } from '../definition/model-context.js';
import { REQUEST_FLAG_SEQUENCE_END, REQUEST_FLAG_SEQUENCE_START, type ExecuteRequest, type ExecuteResponse, type TensorModel } from '../instance/tensor-model-api.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { DEFAULT_AUDIO_LIMITS, decodeAudioFile, decodePcm16, type AudioLimits } from './audio-input.js';
import { CtPunctuation } from './ct-punctuation.js';
import { FsmnVadStream } from './fsmn-vad.js';
import { readPunctuationFolder, readVadFolder, type VadFolder } from './speech-chain-folders.js';
import { CHAIN_TENSORS } from './speech-chain-tensors.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();

async function load(ctx: ModelContext, file: string): Promise<BackendSession> {
  // The instances share the cores, as speech-instance-model.ts's do.
  const threads = Math.max(1, Math.floor(availableParallelism() / ctx.instanceCount));
  return ctx.loadModel(file, { options: { intraOpNumThreads: threads } });
}

function parameter(ctx: ModelContext, key: string): string | undefined {
  return ((ctx.config.parameters as Record<string, { string_value?: string }> | undefined)?.[key])?.string_value;
}

/**
 * An FSMN-VAD folder inside its instance's thread, a stateful model under Triton's sequence batcher
 * (sequence_batching in speech-chain-tensors.ts): each sequence is one audio stream, whose front end,
 * FSMN caches and state machine (FsmnVadStream) live here between its requests. A request's AUDIO is
 * the stream's next audio (raw 16-bit PCM at SAMPLE_RATE, or a WAV file); BOUNDARIES answers the
 * segment starts and ends it revealed; the END request also answers SEGMENTS, every segment, and
 * PCM16K, the stream's audio at 16 kHz, which a whole file sent as one request is cut with.
 */
export class VadInstanceModel implements TensorModel {
  private folder?: VadFolder;
  private session?: BackendSession;
  private limits: AudioLimits = DEFAULT_AUDIO_LIMITS;
  private idleMs = 60_000;
  private readonly streams = new Map<string, { vad: FsmnVadStream; touched: number }>();

  async initialize(ctx: ModelContext): Promise<void> {
    this.folder = readVadFolder(ctx.modelDir, { quantize: parameter(ctx, 'quantize') === 'true' });
    this.limits = { ...DEFAULT_AUDIO_LIMITS, maxSeconds: Number(parameter(ctx, 'max_audio_seconds') ?? DEFAULT_AUDIO_LIMITS.maxSeconds) };
    this.idleMs = Number(parameter(ctx, 'stream_idle_ms') ?? this.idleMs);
    this.session = await load(ctx, this.folder.modelFile);
  }

  async execute(requests: readonly ExecuteRequest[]): Promise<ExecuteResponse[]> {
    this.dropIdle();
    const out: ExecuteResponse[] = [];
    for (const request of requests) {
      try {
        out.push(await this.one(request));
      } catch (error) {
        out.push({ error: error as Error });
      }
    }
    return out;
  }

  private async one(request: ExecuteRequest): Promise<ExecuteResponse> {
    const key = String(request.correlationId);
    if (request.flags & REQUEST_FLAG_SEQUENCE_START || !this.streams.has(key)) this.streams.set(key, { vad: new FsmnVadStream(this.folder!.config, this.session!), touched: 0 });
    const stream = this.streams.get(key)!;
    stream.touched = Date.now();
    const bytes = (request.input(CHAIN_TENSORS.audio)!.data as Uint8Array[])[0];
    const rate = Number((request.input(CHAIN_TENSORS.sampleRate)?.data as Int32Array | undefined)?.[0] ?? 0);
    const samples = bytes.length === 0 ? new Float32Array(0) : rate > 0 ? decodePcm16(bytes, rate, this.limits).samples : decodeAudioFile(bytes, this.limits).samples;
    const end = (request.flags & REQUEST_FLAG_SEQUENCE_END) !== 0;
    const boundaries = await stream.vad.push(samples);
    const outputs = [];
    if (end) {
      boundaries.push(...(await stream.vad.finish()));
      this.streams.delete(key);
      const pcm = new Int16Array(samples.length);
      for (let i = 0; i < samples.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32768)));
      const segments = stream.vad.segments();
      outputs.push(createTensor(CHAIN_TENSORS.segments, 'INT32', [segments.length, 2], Int32Array.from(segments.flat())));
      outputs.push(createTensor(CHAIN_TENSORS.pcm16k, 'BYTES', [1], [new Uint8Array(pcm.buffer)]));
    }
    outputs.push(createTensor(CHAIN_TENSORS.boundaries, 'BYTES', [1], [encoder.encode(JSON.stringify(boundaries))]));
    return { outputs };
  }

  /**
   * A stream the sequence batcher expired without its END (max_sequence_idle_microseconds): one whose
   * FunASR client stays connected but sends nothing. A client that disconnects has its stream ended
   * at once by the WebSocket route (funasr-socket-route.ts), and a whole file is START and END at once.
   */
  private dropIdle(): void {
    const now = Date.now();
    for (const [key, stream] of this.streams) if (now - stream.touched > this.idleMs) this.streams.delete(key);
  }
}

/** A CT-Transformer folder inside its instance's thread: TEXT in, PUNCTUATED out, each row alone (its windows run one after another). */
export class PunctuationInstanceModel implements TensorModel {
  private punctuation?: CtPunctuation;

  async initialize(ctx: ModelContext): Promise<void> {
    const folder = readPunctuationFolder(ctx.modelDir, { quantize: parameter(ctx, 'quantize') === 'true' });
    this.punctuation = new CtPunctuation(folder, await load(ctx, folder.modelFile));
  }

  async execute(requests: readonly ExecuteRequest[]): Promise<ExecuteResponse[]> {
    const out: ExecuteResponse[] = [];
    for (const request of requests) {
      const texts = (request.input(CHAIN_TENSORS.text)!.data as Uint8Array[]).map((b) => decoder.decode(b));
      const punctuated: Uint8Array[] = [];
      for (const text of texts) punctuated.push(encoder.encode(await this.punctuation!.punctuate(text)));
      out.push({ outputs: [createTensor(CHAIN_TENSORS.punctuated, 'BYTES', [texts.length, 1], punctuated)] });
    }
    return out;
  }
}
