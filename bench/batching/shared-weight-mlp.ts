import { createHash } from 'node:crypto';
import { buildOnnxModel, type OnnxInitializer, type OnnxNode } from '../../src/backends/onnx/onnx-model-builder.js';

/**
 * A deep MLP whose hidden layers all reuse ONE width×width weight (ONNX lets many MatMul nodes read
 * one initializer). The bench needs a model that is compute-bound and heavy per request, yet whose
 * weights stay in a core's L2 cache, so two instances on two cores do not fight over memory bandwidth
 * the way a 192 MB MLP does.
 *
 * INPUT0 [batch, inputSize] → MatMul W_in → Relu → `rows` rows of `width` per sample →
 * depth × (MatMul W → Relu) → rows joined again → MatMul W_out → OUTPUT0 [batch, outputSize].
 * With rows > 1 one request carries rows× the compute for the same small JSON body.
 */
export interface SharedWeightMlpOptions {
  readonly inputSize: number;
  readonly width: number;
  readonly depth: number;
  readonly rows: number;
  readonly outputSize: number;
  readonly seed: number;
}

export interface SharedWeightMlp {
  readonly onnx: Uint8Array;
  readonly description: string;
  readonly flopsPerSample: number;
  readonly weightBytes: number;
}

export function buildSharedWeightMlp(options: SharedWeightMlpOptions): SharedWeightMlp {
  const { inputSize, width, depth, rows, outputSize, seed } = options;
  const wIn = seededUniform(`${seed}/in`, inputSize * rows * width, Math.sqrt(6 / inputSize));
  const wOut = seededUniform(`${seed}/out`, rows * width * outputSize, 1 / Math.sqrt(rows * width));
  const w = seededUniform(`${seed}/hidden`, width * width, Math.sqrt(6 / width));
  normalizeGrowth(w, width);

  const nodes: OnnxNode[] = [
    { op: 'MatMul', inputs: ['INPUT0', 'W_in'], outputs: ['in_mm'] },
    { op: 'Relu', inputs: ['in_mm'], outputs: ['in_relu'] },
    { op: 'Reshape', inputs: ['in_relu', 'row_shape'], outputs: ['H0'] },
  ];
  for (let layer = 0; layer < depth; layer++) {
    nodes.push({ op: 'MatMul', inputs: [`H${layer}`, 'W'], outputs: [`M${layer}`] });
    nodes.push({ op: 'Relu', inputs: [`M${layer}`], outputs: [`H${layer + 1}`] });
  }
  nodes.push({ op: 'Reshape', inputs: [`H${depth}`, 'sample_shape'], outputs: ['joined'] });
  nodes.push({ op: 'MatMul', inputs: ['joined', 'W_out'], outputs: ['OUTPUT0'] });

  const initializers: OnnxInitializer[] = [
    { name: 'W_in', datatype: 'FP32', shape: [inputSize, rows * width], data: wIn },
    { name: 'W', datatype: 'FP32', shape: [width, width], data: w },
    { name: 'W_out', datatype: 'FP32', shape: [rows * width, outputSize], data: wOut },
    { name: 'row_shape', datatype: 'INT64', shape: [2], data: BigInt64Array.from([-1n, BigInt(width)]) },
    { name: 'sample_shape', datatype: 'INT64', shape: [2], data: BigInt64Array.from([-1n, BigInt(rows * width)]) },
  ];
  const onnx = buildOnnxModel({
    inputs: [{ name: 'INPUT0', datatype: 'FP32', shape: ['batch', inputSize] }],
    outputs: [{ name: 'OUTPUT0', datatype: 'FP32', shape: ['batch', outputSize] }],
    nodes,
    initializers,
  });
  const flopsPerSample = 2 * (inputSize * rows * width + depth * rows * width * width + rows * width * outputSize);
  const weightBytes = 4 * (wIn.length + w.length + wOut.length);
  const rowsText = rows > 1 ? ` as ${rows} rows` : '';
  const description =
    `MLP ${inputSize}→${rows * width}${rowsText}→${depth}× shared ${width}×${width} MatMul+Relu→${outputSize}, FP32, ` +
    `${(weightBytes / 2 ** 20).toFixed(2)} MiB of weights, ${(flopsPerSample / 1e6).toFixed(1)} MFLOP a sample`;
  return { onnx, description, flopsPerSample, weightBytes };
}

/** Uniform in ±limit from SHAKE-256 of `key`: reproducible weights without a hand-written PRNG. */
function seededUniform(key: string, length: number, limit: number): Float32Array {
  const bytes = createHash('shake256', { outputLength: length * 4 }).update(key).digest();
  const words = new Uint32Array(bytes.buffer, bytes.byteOffset, length);
  return Float32Array.from(words, (u) => ((u / 2 ** 32) * 2 - 1) * limit);
}

/**
 * Scales `w` so that repeating h ← Relu(h·W) keeps |h| steady. Applying the same matrix dozens of
 * times multiplies |h| by a fixed factor per layer, so without this the activations overflow or
 * sink into denormals, which CPUs compute far more slowly — the bench would measure that, not
 * MatMul. Relu(c·x) = c·Relu(x) for c > 0, so dividing W by the measured factor is exact.
 */
function normalizeGrowth(w: Float32Array, width: number): void {
  let h = Float64Array.from({ length: width }, (_, i) => 1 + Math.sin(i));
  let logGrowth = 0;
  const burnIn = 32;
  const measured = 32;
  for (let step = 0; step < burnIn + measured; step++) {
    const next = new Float64Array(width);
    for (let i = 0; i < width; i++) {
      const hi = h[i]!;
      if (hi === 0) continue;
      for (let j = 0; j < width; j++) next[j]! += hi * w[i * width + j]!;
    }
    let norm = 0;
    for (let j = 0; j < width; j++) norm += next[j]! > 0 ? next[j]! ** 2 : 0;
    norm = Math.sqrt(norm);
    if (step >= burnIn) logGrowth += Math.log(norm);
    h = next.map((v) => (v > 0 ? v / norm : 0));
  }
  const scale = Math.exp(-logGrowth / measured);
  for (let k = 0; k < w.length; k++) w[k]! *= scale;
}
