/**
 * Pre- and post-processing of the classifier, kept apart from the NPU session so that they run
 * (and are tested) on any machine.
 */

/** Features per request: the model's input is FP32 [batch, FEATURES]. */
export const FEATURES = 4;

/** Class names in the order of the model's output logits. */
export const LABELS = ['negative', 'positive'] as const;

/** Per-feature mean and standard deviation of the training data, applied before the model. */
export const FEATURE_MEAN = [0, 0, 0, 0];
export const FEATURE_STD = [1, 1, 1, 1];

export interface Classification {
  readonly label: (typeof LABELS)[number];
  readonly probability: number;
}

/** Standardises each row and packs the batch row after row into one FP32 buffer. */
export function preprocess(rows: readonly (readonly number[])[]): Float32Array {
  const out = new Float32Array(rows.length * FEATURES);
  rows.forEach((row, r) => {
    for (let f = 0; f < FEATURES; f++) out[r * FEATURES + f] = (row[f]! - FEATURE_MEAN[f]!) / FEATURE_STD[f]!;
  });
  return out;
}

/** Softmax over each row of logits; the most probable label with its probability. */
export function postprocess(logits: Float32Array, batchSize: number): Classification[] {
  const classes = LABELS.length;
  return Array.from({ length: batchSize }, (_, r) => {
    const row = logits.subarray(r * classes, (r + 1) * classes);
    const max = Math.max(...row);
    const exps = Array.from(row, (v) => Math.exp(v - max));
    const total = exps.reduce((sum, v) => sum + v, 0);
    const best = exps.indexOf(Math.max(...exps));
    return { label: LABELS[best]!, probability: exps[best]! / total };
  });
}
