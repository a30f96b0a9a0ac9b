import { createError, type ServeFnError } from '../errors/index.js';
import type { EnsembleStepPlan } from '../inference/ensemble-model.js';
import type { InferenceModelInfo } from '../inference/inference-model.js';
import { formatShape, shapesCompatible, withBatchDim } from '../tensor/tensor-factory.js';
import type { Datatype } from '../spec/tensor.js';
import type { ModelEnsembling } from './model-config.js';

export type ModelInfoLookup = (name: string, version?: string) => InferenceModelInfo | undefined;

interface Produced {
  readonly datatype: Datatype;
  /** Full shape, batch dimension included when the producing model batches. */
  readonly shape: readonly number[];
  readonly what: string;
  readonly step?: number;
}

/**
 * Checks an ensemble at load time, as Triton's ValidateEnsembleConfig does: every step model loaded
 * and mapped only to tensors it has, every required step input fed, every tensor read produced
 * exactly once (by an ensemble input or a step) with the datatype and shape the reader expects,
 * every ensemble output produced, and no step depending on itself. No step may run the ensemble
 * itself, directly or through other ensembles (Triton refuses circular dependencies among
 * ensembles): a reload could otherwise find its own previous version loaded and accept it.
 * Throws SF_ERR_ENSEMBLE_INVALID.
 */
export function planEnsemble(info: InferenceModelInfo, scheduling: ModelEnsembling | undefined, lookup: ModelInfoLookup): EnsembleStepPlan[] {
  const invalid = (why: string): ServeFnError => createError('SF_ERR_ENSEMBLE_INVALID', info.name, why);
  if (!scheduling || scheduling.step.length === 0) throw invalid('ensemble_scheduling has no step');
  if (info.inputs.length === 0 || info.outputs.length === 0) throw invalid('declare its input and output tensors in config.pbtxt');

  const steps = scheduling.step.map((step, index) => {
    const label = `step ${index} (model '${step.model_name}')`;
    const modelVersion = step.model_version > 0 ? String(step.model_version) : undefined;
    if (step.model_name === info.name) throw invalid(`${label} runs the ensemble itself`);
    const model = lookup(step.model_name, modelVersion);
    if (!model) throw invalid(`${label} uses a model that is not loaded${modelVersion ? ` in version ${modelVersion}` : ''}; load it before the ensemble`);
    for (const name of Object.keys(step.input_map)) {
      if (!model.inputs.some((s) => s.name === name)) throw invalid(`${label} maps '${name}', which is not an input of the model (inputs: ${model.inputs.map((s) => s.name).join(', ')})`);
    }
    for (const spec of model.inputs) {
      if (!spec.optional && !(spec.name in step.input_map)) throw invalid(`${label} leaves the model's input '${spec.name}' unmapped`);
    }
    for (const name of Object.keys(step.output_map)) {
      if (!model.outputs.some((s) => s.name === name)) throw invalid(`${label} maps '${name}', which is not an output of the model (outputs: ${model.outputs.map((s) => s.name).join(', ')})`);
    }
    const loop = pathBackTo(info.name, model, lookup);
    if (loop) throw invalid(`${label} runs the ensemble itself through ${[step.model_name, ...loop].map((m) => `'${m}'`).join(' → ')}`);
    const plan: EnsembleStepPlan = { index, modelName: step.model_name, modelVersion, inputs: Object.entries(step.input_map), outputs: Object.entries(step.output_map) };
    return { plan, model, label };
  });

  const check = (produced: Produced, datatype: Datatype, shape: readonly number[], reader: string): void => {
    if (produced.datatype !== datatype) throw invalid(`${produced.what} is ${produced.datatype}, but ${reader} expects ${datatype}`);
    if (!shapesCompatible(shape, produced.shape)) throw invalid(`${produced.what} has shape ${formatShape(produced.shape)}, but ${reader} expects ${formatShape(shape)}`);
  };

  const producers = new Map<string, Produced>();
  for (const spec of info.inputs) producers.set(spec.name, { datatype: spec.datatype, shape: withBatchDim(spec.shape, info.maxBatchSize), what: `ensemble input '${spec.name}'` });
  for (const { plan, model, label } of steps) {
    for (const [output, tensor] of plan.outputs) {
      const previous = producers.get(tensor);
      const what = `tensor '${tensor}' (${label} output '${output}')`;
      if (previous) throw invalid(`tensor '${tensor}' is produced twice: by ${previous.what} and by ${label} output '${output}'`);
      const spec = model.outputs.find((s) => s.name === output)!;
      producers.set(tensor, { datatype: spec.datatype, shape: withBatchDim(spec.shape, model.maxBatchSize), what, step: plan.index });
    }
  }
  for (const { plan, model, label } of steps) {
    for (const [input, tensor] of plan.inputs) {
      const produced = producers.get(tensor);
      if (!produced) throw invalid(`${label} reads '${tensor}', which is neither an ensemble input nor an output of any step`);
      const spec = model.inputs.find((s) => s.name === input)!;
      check(produced, spec.datatype, withBatchDim(spec.shape, model.maxBatchSize), `${label} input '${input}'`);
    }
  }
  for (const spec of info.outputs) {
    const produced = producers.get(spec.name);
    if (!produced) throw invalid(`output '${spec.name}' is never produced by any step`);
    check(produced, spec.datatype, withBatchDim(spec.shape, info.maxBatchSize), `ensemble output '${spec.name}'`);
  }
  const cycle = findCycle(steps.map(({ plan }) => plan.inputs.flatMap(([, tensor]) => producers.get(tensor)?.step ?? [])));
  if (cycle) throw invalid(`its steps form a cycle: ${cycle.map((i) => steps[i].label).join(' → ')}`);
  return steps.map(({ plan }) => plan);
}

/**
 * The names of the ensembles leading from `model` (an ensemble's step model) back to ensemble
 * `name`, ending with `name`, or undefined. Each ensemble is entered once, so this ends whatever
 * the loaded ensembles look like.
 */
function pathBackTo(name: string, model: InferenceModelInfo, lookup: ModelInfoLookup): string[] | undefined {
  const entered = new Set<string>();
  const stack: { model: InferenceModelInfo; path: string[] }[] = [{ model, path: [] }];
  while (stack.length > 0) {
    const { model: current, path } = stack.pop()!;
    for (const step of stepModels(current)) {
      if (step.name === name) return [...path, name];
      const key = `${step.name}\0${step.version ?? ''}`;
      if (entered.has(key)) continue;
      entered.add(key);
      const next = lookup(step.name, step.version);
      if (next) stack.push({ model: next, path: [...path, step.name] });
    }
  }
  return undefined;
}

/** The step models of a loaded ensemble, read from the configuration it serves; none for other models. */
function stepModels(model: InferenceModelInfo): { name: string; version?: string }[] {
  if (model.platform !== 'ensemble') return [];
  const steps = (model.config.ensemble_scheduling as { step?: { model_name: string; model_version: number }[] } | undefined)?.step ?? [];
  return steps.map((step) => ({ name: step.model_name, version: step.model_version > 0 ? String(step.model_version) : undefined }));
}

/** A dependency cycle among steps (`needs[i]`: the steps step i reads from), as a closed path, or undefined. */
function findCycle(needs: readonly number[][]): number[] | undefined {
  const state = new Array<'new' | 'open' | 'done'>(needs.length).fill('new');
  const path: number[] = [];
  const visit = (step: number): number[] | undefined => {
    if (state[step] === 'done') return undefined;
    if (state[step] === 'open') return [...path.slice(path.indexOf(step)), step];
    state[step] = 'open';
    path.push(step);
    for (const next of needs[step]) {
      const found = visit(next);
      if (found) return found;
    }
    path.pop();
    state[step] = 'done';
    return undefined;
  };
  for (let step = 0; step < needs.length; step++) {
    const found = visit(step);
    if (found) return found;
  }
  return undefined;
}
