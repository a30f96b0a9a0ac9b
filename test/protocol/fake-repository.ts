import { createError } from '../../src/errors/index.js';
import type {
  InferenceModel,
  InferenceModelInfo,
  InferRequest,
  InferResponse,
  LoadRequest,
  ModelRepository,
  RepositoryIndexEntry,
} from '../../src/inference/inference-model.js';
import type { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { checkTensorAgainstSpec } from '../../src/tensor/index.js';
import type { Datatype, Tensor, TensorSpec } from '../../src/spec/tensor.js';

/**
 * Small InferenceModel / ModelRepository implementations for the protocol tests: Triton's `simple`
 * and `simple_string` computed exactly, identity models for every datatype, and a repository with
 * Triton's control modes. They check inputs the way the interface asks real models to.
 */

type Compute = (inputs: ReadonlyMap<string, Tensor>, model: FakeModel) => Tensor[];

export interface FakeModelOptions {
  readonly name: string;
  readonly version?: string;
  readonly platform?: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  readonly maxBatchSize?: number;
  readonly decoupled?: boolean;
  readonly compute: Compute;
  readonly recorder?: InferenceRecorder;
}

export class FakeModel implements InferenceModel {
  readonly info: InferenceModelInfo;
  readonly requests: InferRequest[] = [];
  isReady = true;
  /** When set, infer waits for it before answering (to hold a request in flight). */
  hold?: Promise<void>;
  private readonly compute: Compute;
  private readonly recorder?: InferenceRecorder;

  constructor(options: FakeModelOptions) {
    const version = options.version ?? '1';
    const maxBatchSize = options.maxBatchSize ?? 0;
    const platform = options.platform ?? 'onnxruntime_onnx';
    const configTensor = (t: TensorSpec): Record<string, unknown> => ({ name: t.name, data_type: t.datatype === 'BYTES' ? 'TYPE_STRING' : `TYPE_${t.datatype}`, dims: [...t.shape] });
    this.info = {
      name: options.name,
      version,
      platform,
      inputs: options.inputs,
      outputs: options.outputs,
      maxBatchSize,
      decoupled: options.decoupled ?? false,
      config: { name: options.name, platform, max_batch_size: maxBatchSize, input: options.inputs.map(configTensor), output: options.outputs.map(configTensor) },
    };
    this.compute = options.compute;
    this.recorder = options.recorder;
  }

  ready(): boolean {
    return this.isReady;
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    this.requests.push(request);
    if (this.hold) await this.hold;
    if (request.signal?.aborted) throw createError('SF_ERR_CANCELLED');
    const inputs = new Map(request.inputs.map((t) => [t.name, t]));
    for (const t of request.inputs) {
      if (!this.info.inputs.some((s) => s.name === t.name)) throw createError('SF_ERR_TENSOR_UNEXPECTED', t.name, this.info.name);
    }
    let batch = 1;
    for (const spec of this.info.inputs) {
      const tensor = inputs.get(spec.name);
      if (!tensor) {
        if (spec.optional) continue;
        throw createError('SF_ERR_TENSOR_MISSING', spec.name, this.info.name);
      }
      const batched = this.info.maxBatchSize > 0;
      checkTensorAgainstSpec(tensor, batched ? { ...spec, shape: [-1, ...spec.shape] } : spec);
      if (batched) {
        batch = tensor.shape[0];
        if (batch < 1 || batch > this.info.maxBatchSize) {
          throw createError('SF_ERR_TENSOR_SHAPE', spec.name, `a batch of 1 to ${this.info.maxBatchSize}`, `[${tensor.shape.join(',')}]`);
        }
      }
    }
    const outputs = this.compute(inputs, this);
    const { name, version } = this.info;
    this.recorder?.batchExecuted(name, version, batch, { computeInputUs: 1, computeInferUs: 2, computeOutputUs: 3 });
    this.recorder?.requestSucceeded(name, version, { requestUs: 10, queueUs: 4, computeInputUs: 1, computeInferUs: 2, computeOutputUs: 3 });
    return { modelName: name, modelVersion: version, outputs };
  }
}

const utf8 = new TextEncoder();
const fromUtf8 = new TextDecoder();

function int32Pair(inputs: ReadonlyMap<string, Tensor>): [Int32Array, Int32Array, readonly number[]] {
  const a = inputs.get('INPUT0')!;
  return [a.data as Int32Array, inputs.get('INPUT1')!.data as Int32Array, a.shape];
}

/** Triton's `simple` (docs/examples/model_repository/simple): OUTPUT0 = INPUT0 + INPUT1, OUTPUT1 = INPUT0 - INPUT1. */
export function simpleModel(recorder?: InferenceRecorder, version = '1'): FakeModel {
  const spec = (name: string): TensorSpec => ({ name, datatype: 'INT32', shape: [16] });
  return new FakeModel({
    name: 'simple',
    version,
    platform: 'tensorflow_graphdef',
    inputs: [spec('INPUT0'), spec('INPUT1')],
    outputs: [spec('OUTPUT0'), spec('OUTPUT1')],
    maxBatchSize: 8,
    recorder,
    compute: (inputs) => {
      const [a, b, shape] = int32Pair(inputs);
      // Int32Array stores wrap around as INT32 arithmetic does.
      return [
        { name: 'OUTPUT0', datatype: 'INT32', shape, data: a.map((v, i) => v + b[i]) },
        { name: 'OUTPUT1', datatype: 'INT32', shape, data: a.map((v, i) => v - b[i]) },
      ];
    },
  });
}

/** Triton's `simple_string`: the same sums and differences on decimal strings in BYTES tensors. */
export function simpleStringModel(recorder?: InferenceRecorder): FakeModel {
  const spec = (name: string): TensorSpec => ({ name, datatype: 'BYTES', shape: [16] });
  return new FakeModel({
    name: 'simple_string',
    platform: 'tensorflow_graphdef',
    inputs: [spec('INPUT0'), spec('INPUT1')],
    outputs: [spec('OUTPUT0'), spec('OUTPUT1')],
    maxBatchSize: 8,
    recorder,
    compute: (inputs) => {
      const read = (name: string): number[] => (inputs.get(name)!.data as Uint8Array[]).map((b) => Number.parseInt(fromUtf8.decode(b), 10));
      const a = read('INPUT0');
      const b = read('INPUT1');
      const shape = inputs.get('INPUT0')!.shape;
      const bytes = (values: number[]): Uint8Array[] => values.map((v) => utf8.encode(String(v)));
      return [
        { name: 'OUTPUT0', datatype: 'BYTES', shape, data: bytes(a.map((v, i) => v + b[i])) },
        { name: 'OUTPUT1', datatype: 'BYTES', shape, data: bytes(a.map((v, i) => v - b[i])) },
      ];
    },
  });
}

/** `identity_<datatype>`: OUTPUT0 is INPUT0, any shape of the given rank (default one variable dimension). */
export function identityModel(datatype: Datatype, shape: readonly number[] = [-1], maxBatchSize = 0): FakeModel {
  return new FakeModel({
    name: `identity_${datatype.toLowerCase()}`,
    inputs: [{ name: 'INPUT0', datatype, shape }],
    outputs: [{ name: 'OUTPUT0', datatype, shape }],
    maxBatchSize,
    compute: (inputs) => {
      const input = inputs.get('INPUT0')!;
      return [{ ...input, name: 'OUTPUT0' }];
    },
  });
}

/** `versioned` version v: OUTPUT0 = INPUT0 × v, so an answer shows which version ran. */
export function versionedModel(version: string): FakeModel {
  const spec = (name: string): TensorSpec => ({ name, datatype: 'INT32', shape: [1] });
  return new FakeModel({
    name: 'versioned',
    version,
    inputs: [spec('INPUT0')],
    outputs: [spec('OUTPUT0')],
    compute: (inputs) => [{ name: 'OUTPUT0', datatype: 'INT32', shape: [1], data: (inputs.get('INPUT0')!.data as Int32Array).map((v) => v * Number(version)) }],
  });
}

export interface FakeRepositoryOptions {
  readonly controlMode?: ModelRepository['controlMode'];
  /** Models the repository knows but has not loaded (explicit mode loads them on request). */
  readonly unloaded?: readonly FakeModel[];
}

/** A ModelRepository over fixed FakeModels; load and unload move models between served and unloaded. */
export class FakeRepository implements ModelRepository {
  readonly controlMode: ModelRepository['controlMode'];
  readonly loads: { name: string; request?: LoadRequest }[] = [];
  private served: FakeModel[];
  private unloaded: FakeModel[];

  constructor(models: readonly FakeModel[], options: FakeRepositoryOptions = {}) {
    this.controlMode = options.controlMode ?? 'none';
    this.served = [...models];
    this.unloaded = [...(options.unloaded ?? [])];
  }

  models(name?: string): readonly FakeModel[] {
    return this.served.filter((m) => name === undefined || m.info.name === name);
  }

  get(name: string, version?: string): FakeModel {
    const versions = this.models(name);
    if (versions.length === 0) throw createError('SF_ERR_MODEL_UNKNOWN', name);
    if (version === undefined) return versions[versions.length - 1];
    const found = versions.find((m) => m.info.version === version);
    if (!found) throw createError('SF_ERR_MODEL_VERSION_UNKNOWN', name, version);
    return found;
  }

  async index(options: { readyOnly?: boolean } = {}): Promise<readonly RepositoryIndexEntry[]> {
    const served = this.served.map((m) => ({ name: m.info.name, version: m.info.version, state: m.ready() ? 'READY' : 'UNAVAILABLE' }));
    const unloaded = this.unloaded.map((m) => ({ name: m.info.name, version: m.info.version, state: 'UNAVAILABLE', reason: 'unloaded' }));
    const all = [...served, ...unloaded].sort((a, b) => (a.name === b.name ? a.version.localeCompare(b.version) : a.name < b.name ? -1 : 1));
    return options.readyOnly ? all.filter((e) => e.state === 'READY') : all;
  }

  async load(name: string, request?: LoadRequest): Promise<void> {
    this.loads.push({ name, request });
    const moving = this.unloaded.filter((m) => m.info.name === name);
    if (moving.length === 0 && this.models(name).length === 0) throw createError('SF_ERR_MODEL_UNKNOWN', name);
    this.unloaded = this.unloaded.filter((m) => m.info.name !== name);
    this.served.push(...moving);
  }

  async unload(name: string): Promise<void> {
    const moving = this.models(name);
    if (moving.length === 0) throw createError('SF_ERR_MODEL_UNKNOWN', name);
    this.served = this.served.filter((m) => m.info.name !== name);
    this.unloaded.push(...moving);
  }
}
