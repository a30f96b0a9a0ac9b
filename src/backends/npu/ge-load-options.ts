import { createError } from '../../errors/index.js';
import type { TensorSpec } from '../../spec/tensor.js';

/**
 * The options of an npu_ge load, sorted into the scopes GE takes them in. The keys follow Huawei's
 * Triton GE backend (hicann/triton-inference-server-ge-backend, src/model_state.cpp SetOptions and
 * ParseCmdlineConfig; docs/性能调优方法论.md): `ge.*` and `global.ge.*` go to GEInitialize,
 * `session.ge.*` to each ge::Session, `graph.ge.*` to Session::AddGraph, and `input_shape`
 * (ge::ir_option::INPUT_SHAPE) to aclgrphParseONNX. `ge.aicoreNum` is the exception: it binds a
 * stream to some of the AI cores, which the GE backend sets on each of its sessions, so in any
 * scope it goes to each slot's Session, and two models may bind their streams differently. Option
 * keys and their meaning: hicann/metadef branch 8.5.0, inc/external/ge_common/ge_api_types.h.
 */
export interface GeLoadPlan {
  /** (session, graph, stream) execution slots. */
  readonly slots: number;
  readonly globalOptions: Readonly<Record<string, string>>;
  readonly sessionOptions: Readonly<Record<string, string>>;
  readonly graphOptions: Readonly<Record<string, string>>;
  readonly parserOptions: Readonly<Record<string, string>>;
}

const BACKEND = 'npu_ge';
/** ge_api_types.h PRECISION_MODE and PRECISION_MODE_V2. */
const PRECISION_KEYS = ['ge.exec.precision_mode', 'ge.exec.precision_mode_v2'];
/** ge_api_types.h AICORE_NUM: cube|vector cores per stream, a session option in the GE backend (docs/性能调优方法论.md). */
const PER_SESSION_KEYS = new Set(['ge.aicoreNum']);
const SCOPES: readonly (readonly [prefix: string, scope: 'globalOptions' | 'sessionOptions' | 'graphOptions'])[] = [
  ['global.', 'globalOptions'],
  ['session.', 'sessionOptions'],
  ['graph.', 'graphOptions'],
];

/**
 * Sorts `options` into a GeLoadPlan. Unless some scope sets a precision mode, every session gets
 * `ge.exec.precision_mode_v2 = "origin"`: GE's own default for inference is fp16, which would
 * round an fp32 ONNX model's results away from what ONNX Runtime computes on the CPU; origin keeps
 * the model's own precision (the GE backend recommends the same, docs/问题定位.md). "fp16",
 * "mixed_float16" and the other modes pass through to GE.
 */
export function geLoadPlan(options: Readonly<Record<string, unknown>>, label: string): GeLoadPlan {
  const invalid = (why: string) => createError('SF_ERR_BACKEND_LOAD_FAILED', BACKEND, label, why);
  const scopes = { globalOptions: {} as Record<string, string>, sessionOptions: {} as Record<string, string>, graphOptions: {} as Record<string, string> };
  const parserOptions: Record<string, string> = {};
  let slots = 1;
  for (const [key, value] of Object.entries(options)) {
    if (value === undefined) continue;
    if (key === 'slots') {
      if (!Number.isSafeInteger(value) || (value as number) < 1) throw invalid(`option slots must be a whole number >= 1, got ${JSON.stringify(value)}`);
      slots = value as number;
      continue;
    }
    if (typeof value !== 'string' && typeof value !== 'number' && typeof value !== 'boolean') {
      throw invalid(`option ${key} must be a string (GE takes every option as text), got ${JSON.stringify(value)}`);
    }
    const text = String(value);
    if (key === 'input_shape') {
      parserOptions.input_shape = text;
      continue;
    }
    const scoped = SCOPES.find(([prefix]) => key.startsWith(`${prefix}ge.`));
    const geKey = scoped ? key.slice(scoped[0].length) : key;
    if (PER_SESSION_KEYS.has(geKey)) scopes.sessionOptions[geKey] = text;
    else if (scoped) scopes[scoped[1]][geKey] = text;
    else if (key.startsWith('ge.')) scopes.globalOptions[key] = text;
    else throw invalid(`unknown option ${key}; npu_ge takes slots, input_shape, ge.* (GEInitialize), session.ge.* (each Session) and graph.ge.* (AddGraph)`);
  }
  const precisionSet = Object.values(scopes).some((scope) => PRECISION_KEYS.some((k) => k in scope));
  if (!precisionSet) scopes.sessionOptions['ge.exec.precision_mode_v2'] = 'origin';
  return { slots, ...scopes, parserOptions };
}

/** `name:d0,d1,...;name2:...` (ge.inputShape, input_shape) as a map from input name to dims. */
function parseShapeList(text: string): Map<string, number[]> | undefined {
  const shapes = new Map<string, number[]>();
  for (const entry of text.split(';').filter((e) => e.trim() !== '')) {
    const colon = entry.lastIndexOf(':');
    if (colon < 0) return undefined;
    const dims = entry.slice(colon + 1).split(',').map((d) => Number(d.trim()));
    if (dims.some((d) => !Number.isInteger(d))) return undefined;
    shapes.set(entry.slice(0, colon).trim(), dims);
  }
  return shapes;
}

/**
 * The dims the plan's shape options pin, by input: the parser's input_shape (static_model's among
 * them), then graph.ge.inputShape over it, since AddGraph compiles the parsed graph for those.
 */
function pinnedShapes(plan: GeLoadPlan): Map<string, number[]> {
  const shapes = new Map<string, number[]>();
  for (const text of [plan.parserOptions.input_shape, plan.graphOptions['ge.inputShape']]) {
    for (const [name, dims] of (text === undefined ? undefined : parseShapeList(text)) ?? []) shapes.set(name, dims);
  }
  return shapes;
}

/**
 * The ONNX file's inputs narrowed to the shapes the plan compiles: a dimension the file leaves
 * variable but a shape option fixes becomes fixed, so a request of another shape is refused with
 * SF_ERR_TENSOR_SHAPE (400) before GE is called, not by GE (500). The batch dimension stays
 * variable when the graph is compiled for batch gears (`gears`, from batchGears), which the session
 * pads and splits batches to.
 */
export function narrowInputs(inputs: readonly TensorSpec[], plan: GeLoadPlan, gears: readonly number[] | undefined): TensorSpec[] {
  const pinned = pinnedShapes(plan);
  return inputs.map((spec) => {
    const dims = pinned.get(spec.name);
    if (dims === undefined || dims.length !== spec.shape.length) return spec;
    const shape = spec.shape.map((d, i) => (d === -1 && dims[i] >= 0 && !(i === 0 && gears !== undefined) ? dims[i] : d));
    return { ...spec, shape };
  });
}

/**
 * The batch sizes a GE graph is compiled for when its batch inputs (`batchInputs`, whose first
 * dimension is variable in the ONNX file) are pinned: by graph.ge.inputShape with -1 in the first
 * dimension only plus graph.ge.dynamicDims listing one size per -1 (the same size for every input),
 * or by a parser input_shape or graph.ge.inputShape fixing that dimension (static_model's batch-1
 * graph). Undefined when
 * the graph takes any batch size, or when its gears are on other dimensions, which GE checks itself.
 */
export function batchGears(plan: GeLoadPlan, batchInputs: readonly string[]): number[] | undefined {
  if (batchInputs.length === 0) return undefined;
  const graphShapes = plan.graphOptions['ge.inputShape'];
  const dynamicDims = plan.graphOptions['ge.dynamicDims'];
  if (graphShapes !== undefined && dynamicDims !== undefined) {
    const shapes = parseShapeList(graphShapes);
    const batchOnly = shapes !== undefined && batchInputs.every((name) => {
      const dims = shapes.get(name);
      return dims !== undefined && dims[0] === -1 && dims.slice(1).every((d) => d >= 0);
    });
    if (!batchOnly || shapes.size !== batchInputs.length) return undefined;
    const gears = dynamicDims.split(';').filter((g) => g.trim() !== '').map((gear) => gear.split(',').map((d) => Number(d.trim())));
    const sizes = gears.map((values) => (values.length === batchInputs.length && values.every((v) => v === values[0]) ? values[0] : NaN));
    if (sizes.some((size) => !Number.isSafeInteger(size) || size < 1)) return undefined;
    return [...new Set(sizes)].sort((a, b) => a - b);
  }
  const pinned = pinnedShapes(plan);
  const fixed = batchInputs.map((name) => pinned.get(name)?.[0]);
  const size = fixed[0];
  return size !== undefined && size >= 1 && fixed.every((d) => d === size) ? [size] : undefined;
}
