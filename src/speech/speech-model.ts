import type { InferRequest, InferResponse, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import type { ServedModel } from '../inference/served-model.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import type { SpeechChain } from './speech-chain.js';
import type { SpeechFolder } from './speech-folder.js';
import { SPEECH_INPUTS, SPEECH_OUTPUTS } from './speech-tensors.js';
import type { Transcription, TranscribeOptions } from './transcription.js';

/** Audio as a protocol received it: a WAV file, or raw 16-bit PCM at `sampleRate`. */
export interface SpeechRequest extends TranscribeOptions {
  readonly audio: Uint8Array;
  readonly sampleRate?: number;
  readonly signal?: AbortSignal;
}

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

  /** The VAD and punctuation models served beside this one (ServerSpeechModels attaches them), if any. */
  chain?: SpeechChain;

  /** A whole file through the chain when one is served (VAD segments, punctuation), else decoded whole. */
  transcribe(request: SpeechRequest): Promise<Transcription> {
    return this.chain ? this.chain.transcribe(this, request) : this.transcribeUtterance(request);
  }

  /** The audio decoded whole, as one utterance, by this model alone. */
  async transcribeUtterance(request: SpeechRequest): Promise<Transcription> {
    const inputs: Tensor[] = [createTensor(SPEECH_INPUTS.audio, 'BYTES', [1, 1], [request.audio])];
    // Every optional input is always sent, so all requests share one signature and may share a batch.
    inputs.push(createTensor(SPEECH_INPUTS.sampleRate, 'INT32', [1, 1], Int32Array.of(request.sampleRate ?? 0)));
    inputs.push(createTensor(SPEECH_INPUTS.language, 'BYTES', [1, 1], [new TextEncoder().encode(request.language ?? 'auto')]));
    inputs.push(createTensor(SPEECH_INPUTS.itn, 'BOOL', [1, 1], Uint8Array.of(request.itn === false ? 0 : 1)));
    const response = await this.version.infer({ inputs, outputs: [{ name: SPEECH_OUTPUTS.result }], signal: request.signal });
    const result = response.outputs.find((o) => o.name === SPEECH_OUTPUTS.result)!;
    return JSON.parse(new TextDecoder().decode((result.data as Uint8Array[])[0])) as Transcription;
  }
}
