import { createError } from '../errors/index.js';
import type { InferenceModelInfo, InferRequest, InferResponse, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import { validateInferRequest } from '../inference/request-validation.js';
import type { ServedModel } from '../inference/served-model.js';
import type { TensorSpec } from '../spec/tensor.js';
import { createTensor } from '../tensor/tensor-factory.js';
import { CHAIN_TENSORS } from './speech-chain-tensors.js';

let nextRequest = 1;

/** A chained model's readiness and repository entry, as a speech folder's (SpeechModel). */
abstract class ChainFolderModel implements ServerModel {
  abstract readonly info: InferenceModelInfo;

  constructor(protected readonly version: ServedModel) {}

  ready(): boolean {
    return this.version.ready();
  }

  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    return this.ready() ? { name, version, state: 'READY' } : { name, version, state: 'UNAVAILABLE', reason: 'its instances are not ready' };
  }

  abstract infer(request: InferRequest): Promise<InferResponse>;
}

/**
 * A CT-Transformer punctuation folder on KServe v2 (HTTP and gRPC): TEXT (BYTES [1], UTF-8) in,
 * PUNCTUATED (BYTES [1]) out, batched by Triton's dynamic batcher as the chain's own requests are.
 * Its model version's tensors are already this public face, so requests go to it as they come;
 * statistics are the version's, which counts the chain's requests too (as an ASR model's count
 * its WebSocket and OpenAI requests).
 */
export class PunctuationInferenceModel extends ChainFolderModel {
  get info(): InferenceModelInfo {
    return this.version.info;
  }

  infer(request: InferRequest): Promise<InferResponse> {
    return this.version.infer(request);
  }
}

const AUDIO: TensorSpec = { name: CHAIN_TENSORS.audio, datatype: 'BYTES', shape: [1] };
const SAMPLE_RATE: TensorSpec = { name: CHAIN_TENSORS.sampleRate, datatype: 'INT32', shape: [1], optional: true };
/**
 * FunASR's VAD result `[[beg, end], ...]` in ms (funasr AutoModel's `value`, funasr_onnx's Fsmn_vad),
 * as a tensor: INT32 [n, 2], one row per segment. INT32, not INT64: the longest audio taken
 * (--max-audio-seconds) is far below 2^31 ms, and INT32 reads as plain numbers in every client
 * (JSON, numpy, JavaScript typed arrays) where INT64 needs BigInt in JavaScript.
 */
const SEGMENTS: TensorSpec = { name: CHAIN_TENSORS.segments, datatype: 'INT32', shape: [-1, 2] };

/**
 * An FSMN-VAD folder on KServe v2 (HTTP and gRPC): AUDIO (BYTES [1]: a WAV file, or with
 * SAMPLE_RATE above 0 raw 16-bit little-endian PCM at that rate, as a speech model's AUDIO) in,
 * SEGMENTS (INT32 [n, 2], start and end ms) out. Each request is a whole file: it goes to the VAD's
 * model version as one sequence, START and END at once (the version is stateful for FunASR's live
 * streams, speech-chain.ts), so a client's own sequence parameters are refused.
 */
export class VadInferenceModel extends ChainFolderModel {
  readonly info: InferenceModelInfo;

  constructor(version: ServedModel) {
    super(version);
    const { name, version: v } = version.info;
    const config = (t: TensorSpec) => ({ name: t.name, data_type: `TYPE_${t.datatype === 'BYTES' ? 'STRING' : t.datatype}`, dims: [...t.shape], ...(t.optional ? { optional: true } : {}) });
    this.info = {
      name, version: v, platform: 'serve-fn', inputs: [AUDIO, SAMPLE_RATE], outputs: [SEGMENTS], maxBatchSize: 0, decoupled: false,
      config: { name, platform: 'serve-fn', backend: 'serve-fn', max_batch_size: 0, input: [AUDIO, SAMPLE_RATE].map(config), output: [config(SEGMENTS)] },
    };
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    const { wire } = validateInferRequest(this.info, request);
    if (Object.keys(wire.parameters).some((key) => key.startsWith('sequence_'))) {
      throw createError('SF_ERR_BAD_REQUEST', `model '${this.info.name}' takes a whole file per request; send no sequence parameters (FunASR's WebSocket protocol streams audio through it)`);
    }
    const audio = (wire.inputs.find((t) => t.name === CHAIN_TENSORS.audio)!.data as Uint8Array[])[0];
    if (audio.length === 0) throw createError('SF_ERR_AUDIO_INVALID', 'AUDIO is empty');
    const rate = Number((wire.inputs.find((t) => t.name === CHAIN_TENSORS.sampleRate)?.data as Int32Array | undefined)?.[0] ?? 0);
    if (rate < 0) throw createError('SF_ERR_AUDIO_INVALID', `SAMPLE_RATE must be 0 (AUDIO is a WAV file) or the PCM's rate in Hz (got ${rate})`);
    const response = await this.version.infer({
      id: request.id,
      inputs: [createTensor(CHAIN_TENSORS.audio, 'BYTES', [1], [audio]), createTensor(CHAIN_TENSORS.sampleRate, 'INT32', [1], Int32Array.of(rate))],
      outputs: [{ name: CHAIN_TENSORS.segments }],
      parameters: { sequence_id: `vad-v2-${nextRequest++}`, sequence_start: true, sequence_end: true },
      signal: request.signal,
      trace: request.trace,
    });
    const segments = response.outputs.filter((o) => o.name === CHAIN_TENSORS.segments && (wire.outputs.length === 0 || wire.outputs.includes(o.name)));
    return { modelName: this.info.name, modelVersion: this.info.version, id: request.id, outputs: segments };
  }
}
