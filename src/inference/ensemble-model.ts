import { createError } from '../errors/index.js';
import type { InferenceRecorder } from '../metrics/inference-recorder.js';
import { failureReason, toUs } from '../engine/request-accounting.js';
import { now } from '../wire/epoch-time.js';
import type { Tensor, TensorData } from '../spec/tensor.js';
import type { InferenceModel, InferenceModelInfo, InferRequest, InferResponse } from './inference-model.js';
import { validateInferRequest } from './request-validation.js';
import type { ServedModel } from './served-model.js';

/** One step of a checked ensemble; maps are [step model tensor, ensemble tensor] pairs. */
export interface EnsembleStepPlan {
  readonly index: number;
  readonly modelName: string;
  /** Undefined: the newest version served when a request runs (model_version -1, or left out). */
  readonly modelVersion?: string;
  readonly inputs: readonly (readonly [modelInput: string, tensor: string])[];
  readonly outputs: readonly (readonly [modelOutput: string, tensor: string])[];
}

export type ModelResolver = (name: string, version?: string) => InferenceModel;

/**
 * A Triton ensemble (platform "ensemble"), run on the HTTP thread: each step calls its model's
 * infer() as soon as every tensor it reads exists, so steps go through their own batchers and
 * independent steps run at once. Step models are looked up per request, so a reloaded step model
 * is used without reloading the ensemble.
 */
export class EnsembleModel implements ServedModel {
  private loaded = false;
  private inflight = 0;
  private drained: (() => void) | undefined;
  /** How many times each tensor is read (by steps, or as an ensemble output). */
  private readonly reads = new Map<string, number>();

  constructor(
    readonly info: InferenceModelInfo,
    private readonly steps: readonly EnsembleStepPlan[],
    private readonly resolve: ModelResolver,
    private readonly recorder: InferenceRecorder,
  ) {
    const read = (tensor: string): void => void this.reads.set(tensor, (this.reads.get(tensor) ?? 0) + 1);
    for (const step of steps) for (const [, tensor] of step.inputs) read(tensor);
    for (const output of info.outputs) read(output.name);
  }

  ready(): boolean {
    return this.loaded && this.steps.every((step) => {
      try {
        return this.resolve(step.modelName, step.modelVersion).ready();
      } catch {
        return false;
      }
    });
  }

  async load(): Promise<void> {
    this.recorder.registerModel(this.info.name, this.info.version);
    this.loaded = true;
  }

  async unload(): Promise<void> {
    this.loaded = false;
    if (this.inflight > 0) await new Promise<void>((resolve) => (this.drained = resolve));
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    const { name, version } = this.info;
    if (!this.loaded) throw createError('SF_ERR_MODEL_NOT_READY', name, version);
    const validated = validateInferRequest(this.info, request);
    const started = now();
    this.inflight++;
    try {
      const tensors = await this.run(validated.wire.inputs, request);
      const outputs = validated.wire.outputs.map((output) => tensors.get(output)!);
      this.recorder.requestSucceeded(name, version, { requestUs: toUs(now() - started), queueUs: 0, computeInputUs: 0, computeInferUs: 0, computeOutputUs: 0 });
      return { modelName: name, modelVersion: version, id: request.id, outputs };
    } catch (err) {
      this.recorder.requestFailed(name, version, failureReason(err, true), { requestUs: toUs(now() - started) });
      throw err;
    } finally {
      if (--this.inflight === 0) this.drained?.();
    }
  }

  private run(inputs: readonly Tensor[], request: InferRequest): Promise<Map<string, Tensor>> {
    const tensors = new Map(inputs.map((t) => [t.name, t] as const));
    const waiting = new Set(this.steps);
    let running = 0;
    let failed = false;
    return new Promise((resolve, reject) => {
      const fail = (err: unknown): void => {
        failed = true;
        reject(err);
      };
      const finished = (step: EnsembleStepPlan, response: InferResponse): void => {
        for (const [output, tensor] of step.outputs) {
          const produced = response.outputs.find((t) => t.name === output);
          if (!produced) return fail(createError('SF_ERR_EXECUTION_FAILED', this.info.name, `step ${step.index}`, `model '${step.modelName}' returned no output '${output}'`));
          tensors.set(tensor, { ...produced, name: tensor });
        }
        running--;
        launch();
      };
      const launch = (): void => {
        if (failed) return;
        for (const step of [...waiting]) {
          if (!step.inputs.every(([, tensor]) => tensors.has(tensor))) continue;
          waiting.delete(step);
          running++;
          const stepInputs = step.inputs.map(([input, tensor]) => this.handOver(tensors.get(tensor)!, input));
          Promise.resolve()
            .then(() => this.resolve(step.modelName, step.modelVersion).infer({
              id: request.id,
              inputs: stepInputs,
              outputs: step.outputs.map(([output]) => ({ name: output })),
              parameters: request.parameters,
              priority: request.priority,
              timeoutUs: request.timeoutUs,
              signal: request.signal,
              // A traced ensemble's steps record their spans under its request's.
              trace: request.trace,
            }))
            .then((response) => finished(step, response), fail);
        }
        if (running > 0) return;
        if (waiting.size === 0) resolve(tensors);
        else {
          const [blocked] = waiting;
          const missing = blocked.inputs.find(([, tensor]) => !tensors.has(tensor))![1];
          fail(createError('SF_ERR_TENSOR_MISSING', missing, this.info.name));
        }
      };
      launch();
    });
  }

  /** Step models take ownership of their inputs' buffers, so a tensor read more than once goes out as a copy. */
  private handOver(tensor: Tensor, name: string): Tensor {
    const shared = (this.reads.get(tensor.name) ?? 0) > 1;
    if (!shared) return { ...tensor, name };
    const data = tensor.datatype === 'BYTES'
      ? (tensor.data as Uint8Array[]).map((element) => element.slice())
      : (tensor.data as Exclude<TensorData, Uint8Array[]>).slice();
    return { ...tensor, name, data };
  }
}
