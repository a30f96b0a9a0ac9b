import { readFileSync } from 'node:fs';

/** The global CMVN of a FunASR export: `feat = (feat + shift) * scale`, per dimension. */
export interface Cmvn {
  readonly shift: Float32Array;
  readonly scale: Float32Array;
}

/**
 * Reads `am.mvn`, Kaldi nnet text as FunASR writes it: the line after `<AddShift>` holds the
 * negated means and the line after `<Rescale>` the inverse standard deviations, each as
 * `<LearnRateCoef> 0 [ v1 v2 ... ]` (funasr_onnx/utils/frontend.py, load_cmvn).
 */
export function parseAmMvn(text: string): Cmvn {
  const lines = text.split('\n').map((l) => l.trim().split(/\s+/));
  const vector = (tag: string): Float32Array | undefined => {
    const at = lines.findIndex((l) => l[0] === tag);
    const next = at < 0 ? undefined : lines[at + 1];
    if (!next || next[0] !== '<LearnRateCoef>') return undefined;
    return Float32Array.from(next.slice(3, next.length - 1), Number);
  };
  const shift = vector('<AddShift>');
  const scale = vector('<Rescale>');
  if (!shift || !scale) throw new Error('it has no <AddShift> and <Rescale> vectors, each on the line after its tag starting <LearnRateCoef>');
  if (shift.length !== scale.length || shift.some(Number.isNaN) || scale.some(Number.isNaN)) throw new Error(`its <AddShift> (${shift.length}) and <Rescale> (${scale.length}) vectors are not numbers of one length`);
  return { shift, scale };
}

export function readAmMvn(file: string): Cmvn {
  return parseAmMvn(readFileSync(file, 'utf8'));
}

/** Applies CMVN in place to frames of `cmvn.shift.length` values. */
export function applyCmvn(features: Float32Array, cmvn: Cmvn): Float32Array {
  const dim = cmvn.shift.length;
  for (let i = 0; i < features.length; i++) {
    const d = i % dim;
    features[i] = (features[i] + cmvn.shift[d]) * cmvn.scale[d];
  }
  return features;
}
