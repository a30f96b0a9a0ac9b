import { readFileSync } from 'node:fs';

/** One recognised line: the text and the mean probability of its characters. */
export interface RecognizedText {
  readonly text: string;
  readonly score: number;
}

/**
 * The recogniser's classes: CTC blank at 0, then the key file's characters one per line, then a
 * space (PaddleOCR's use_space_char), which gives the model's 6625 outputs for ppocr_keys_v1.txt.
 */
export function loadCharset(keysPath: string): string[] {
  const keys = readFileSync(keysPath, 'utf8').split('\n').map((k) => k.replace(/\r$/, ''));
  if (keys[keys.length - 1] === '') keys.pop();
  return ['', ...keys, ' '];
}

/**
 * CTC greedy decoding as PaddleOCR's CTCLabelDecode: the best class per time step, repeats merged,
 * blanks dropped; the score is the mean of the kept steps' probabilities (0 for an empty line).
 */
export function ctcGreedyDecode(probs: Float32Array, batch: number, steps: number, charset: readonly string[]): RecognizedText[] {
  const classes = charset.length;
  if (probs.length !== batch * steps * classes) {
    throw new Error(`recogniser output has ${probs.length} values, expected ${batch} x ${steps} x ${classes}`);
  }
  const results: RecognizedText[] = [];
  for (let b = 0; b < batch; b++) {
    let text = '';
    let sum = 0;
    let kept = 0;
    let previous = -1;
    for (let t = 0; t < steps; t++) {
      const base = (b * steps + t) * classes;
      let best = 0;
      for (let c = 1; c < classes; c++) if (probs[base + c] > probs[base + best]) best = c;
      if (best !== 0 && best !== previous) {
        text += charset[best];
        sum += probs[base + best];
        kept++;
      }
      previous = best;
    }
    results.push({ text, score: kept > 0 ? sum / kept : 0 });
  }
  return results;
}
