import { execFileSync } from 'node:child_process';

/** Debian's python3 (python3-torchaudio, python3-onnx, python3-numpy; .ci/run installs them), or $PYTHON. */
export const SPEECH_PYTHON = process.env.PYTHON ?? '/usr/bin/python3';

/** Why the speech reference scripts cannot run here, or undefined when `modules` import. */
export function missingPython(modules: readonly string[]): string | undefined {
  try {
    execFileSync(SPEECH_PYTHON, ['-c', modules.map((m) => `import ${m}`).join('; ')], { stdio: 'ignore' });
    return undefined;
  } catch {
    return `${SPEECH_PYTHON} cannot import ${modules.join(', ')} (apt-get install python3-torchaudio python3-onnx python3-numpy)`;
  }
}

/** am.mvn text in the Kaldi nnet layout FunASR's exports ship, for `shift` and `scale`. */
export function amMvnText(shift: ArrayLike<number>, scale: ArrayLike<number>): string {
  const vec = (v: ArrayLike<number>): string => Array.from(v, (x) => x.toPrecision(8)).join(' ');
  const dim = shift.length;
  return [
    '<Nnet>',
    `<Splice> ${dim} ${dim}`,
    '[ 0 ]',
    `<AddShift> ${dim} ${dim}`,
    `<LearnRateCoef> 0 [ ${vec(shift)} ]`,
    `<Rescale> ${dim} ${dim}`,
    `<LearnRateCoef> 0 [ ${vec(scale)} ]`,
    '</Nnet>',
    '',
  ].join('\n');
}
