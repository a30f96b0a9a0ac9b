import type { InferRequest, InferResponse, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import type { ServedModel } from '../inference/served-model.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import type { SpeechChain } from './speech-chain.js';
import type { SpeechFolder } from './speech-folder.js';
import { SPEECH_SAMPLE_RATE } from './audio-input.js';
import { CHUNK_SIZE_INPUT } from './paraformer-online-config.js';
import { SPEECH_INPUTS, SPEECH_OUTPUTS } from './speech-tensors.js';
import type { Transcription, TranscribeOptions } from './transcription.js';

/** Audio as a protocol received it: a WAV file, or raw 16-bit PCM at `sampleRate`. */
export interface SpeechRequest extends TranscribeOptions {
  readonly audio: Uint8Array;
  readonly sampleRate?: number;
  readonly signal?: AbortSignal;
}

/** A chunk of a stream sent to a streaming model. */
export interface StreamChunk {
  readonly sequenceId: string;
  readonly start: boolean;
  readonly end: boolean;
  /** 16-bit little-endian PCM at 16 kHz. */
  readonly pcm: Uint8Array;
  /** FunASR's chunk_size, read on the START chunk. */
  readonly chunkSize?: readonly number[];
  readonly signal?: AbortSignal;
}

let sequenceCount = 0;

/**
 * A speech folder served: its model version on the engine (KServe v2 over HTTP and gRPC sees it
 * as any repository model), and `transcribe` for the speech protocols (OpenAI's transcriptions,
 * FunASR's WebSocket and HTTP), which go through the same queue, batcher and statistics.
 */
export class SpeechModel implements ServerModel {
  constructor(
    readonly folder: SpeechFolder,
    readonly version: ServedModel,
  ) {}

  get info(): ServedModel['info'] {
    return this.version.info;
  }

  ready(): boolean {
    return this.version.ready();
  }

  infer(request: InferRequest): Promise<InferResponse> {
    return this.version.infer(request);
  }

  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    return this.ready() ? { name, version, state: 'READY' } : { name, version, state: 'UNAVAILABLE', reason: 'its instances are not ready' };
  }

  /** A streaming Paraformer: stateful, each utterance a sequence of chunks (paraformer-online-instance-model.ts). */
  get streaming(): boolean {
    return this.folder.kind === 'ParaformerStreaming';
  }

  /**
   * One chunk of a stream, as 16-bit PCM at 16 kHz: the words it completes. `start` opens the
   * stream (with FunASR's chunk_size), `end` closes it and decodes its look-ahead.
   */
  async streamChunk(request: StreamChunk): Promise<Transcription> {
    const chunk = request.start && request.chunkSize ? [createTensor(CHUNK_SIZE_INPUT, 'INT32', [1, 3], Int32Array.from(request.chunkSize))] : [];
    return this.run({ audio: request.pcm, sampleRate: SPEECH_SAMPLE_RATE, signal: request.signal }, chunk, { sequence_id: request.sequenceId, sequence_start: request.start, sequence_end: request.end });
  }

  /** A fresh correlation id for a stream the server opens; strings, so they never meet a KServe client's integer ids. */
  newSequenceId(): string {
    return `serve-fn-speech-${++sequenceCount}`;
  }

  /** The VAD and punctuation models served beside this one (ServerSpeechModels attaches them), if any. */
  chain?: SpeechChain;

  /** A whole file through the chain when one is served (VAD segments, punctuation), else decoded whole. */
  transcribe(request: SpeechRequest): Promise<Transcription> {
    return this.chain ? this.chain.transcribe(this, request) : this.transcribeUtterance(request);
  }

  /** The audio decoded whole, as one utterance, by this model alone. */
  async transcribeUtterance(request: SpeechRequest): Promise<Transcription> {
    // A streaming model takes a whole utterance as a sequence of one request, START and END at once.
    return this.run(request, [], this.streaming ? { sequence_id: this.newSequenceId(), sequence_start: true, sequence_end: true } : undefined);
  }

  private async run(request: SpeechRequest, extra: readonly Tensor[], parameters: Record<string, unknown> | undefined): Promise<Transcription> {
    const inputs: Tensor[] = [createTensor(SPEECH_INPUTS.audio, 'BYTES', [1, 1], [request.audio]), ...extra];
    // Every optional input is always sent, so all requests share one signature and may share a batch.
    inputs.push(createTensor(SPEECH_INPUTS.sampleRate, 'INT32', [1, 1], Int32Array.of(request.sampleRate ?? 0)));
    inputs.push(createTensor(SPEECH_INPUTS.language, 'BYTES', [1, 1], [new TextEncoder().encode(request.language ?? 'auto')]));
    inputs.push(createTensor(SPEECH_INPUTS.itn, 'BOOL', [1, 1], Uint8Array.of(request.itn === false ? 0 : 1)));
    const response = await this.version.infer({ inputs, outputs: [{ name: SPEECH_OUTPUTS.result }], signal: request.signal, ...(parameters ? { parameters } : {}) });
    const result = response.outputs.find((o) => o.name === SPEECH_OUTPUTS.result)!;
    return JSON.parse(new TextDecoder().decode((result.data as Uint8Array[])[0])) as Transcription;
  }
}
