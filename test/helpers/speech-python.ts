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

const MODELS_SCRIPT = new URL('../fixtures/speech/funasr-models.py', import.meta.url).pathname;

/** Writes SenseVoiceSmall-tiny and Paraformer-tiny (funasr-models.py) under `dir`; returns their paths. */
export function makeTinyFunAsrModels(dir: string): { senseVoice: string; paraformer: string } {
  execFileSync(SPEECH_PYTHON, [MODELS_SCRIPT, 'make', dir]);
  return { senseVoice: `${dir}/SenseVoiceSmall-tiny`, paraformer: `${dir}/Paraformer-tiny` };
}

/** Writes `out`: the tiny model's ONNX with its frames axis fixed at `frames` (funasr-models.py static), as ATC compiles it. */
export function staticFramesOnnx(onnx: string, frames: number, out: string): void {
  execFileSync(SPEECH_PYTHON, [MODELS_SCRIPT, 'static', onnx, String(frames), out]);
}

/** The independent numpy reference's transcription of `wav` by the tiny model in `folder`. */
export function referenceTranscript(folder: string, wav: string, language = 'auto', itn: 'withitn' | 'woitn' = 'withitn'): { text: string; tags?: string[]; frames: number } {
  return JSON.parse(execFileSync(SPEECH_PYTHON, [MODELS_SCRIPT, 'reference', folder, wav, language, itn], { encoding: 'utf8' })) as { text: string; tags?: string[]; frames: number };
}

/** Real 16 kHz recordings from Debian's pocketsphinx-testdata. */
export const TEST_WAVS_DIR = '/usr/share/pocketsphinx/test/data';
export const SPEECH_WAVS = [
  `${TEST_WAVS_DIR}/librivox/sense_and_sensibility_01_austen_64kb-0880.wav`,
  `${TEST_WAVS_DIR}/librivox/sense_and_sensibility_01_austen_64kb-0870.wav`,
  `${TEST_WAVS_DIR}/cards/001.wav`,
  `${TEST_WAVS_DIR}/cards/002.wav`,
  `${TEST_WAVS_DIR}/cards/003.wav`,
  `${TEST_WAVS_DIR}/cards/004.wav`,
  `${TEST_WAVS_DIR}/cards/005.wav`,
  `${TEST_WAVS_DIR}/librivox/sense_and_sensibility_01_austen_64kb-0890.wav`,
];

const ONLINE_SCRIPT = new URL('../fixtures/speech/paraformer-online-model.py', import.meta.url).pathname;

/** Writes ParaformerStreaming-tiny (paraformer-online-model.py) under `dir`; returns its path. */
export function makeTinyStreamingParaformer(dir: string): string {
  execFileSync(SPEECH_PYTHON, [ONLINE_SCRIPT, 'make', dir]);
  return `${dir}/ParaformerStreaming-tiny`;
}

/** The independent numpy reference's text per chunk when `wav` is streamed in chunks of `chunkSamples`, and the text of all their pieces. */
export function referenceStreaming(folder: string, wav: string, chunkSamples: number): { texts: string[]; text: string } {
  return JSON.parse(execFileSync(SPEECH_PYTHON, [ONLINE_SCRIPT, 'reference', folder, wav, String(chunkSamples)], { encoding: 'utf8' })) as { texts: string[]; text: string };
}

const VAD_PUNC_SCRIPT = new URL('../fixtures/speech/funasr-vad-punc.py', import.meta.url).pathname;

/** Writes fsmn-vad-tiny and ct-punc-tiny (funasr-vad-punc.py) under `dir`; returns their paths. */
export function makeTinyVadAndPunctuation(dir: string): { vad: string; punctuation: string } {
  execFileSync(SPEECH_PYTHON, [VAD_PUNC_SCRIPT, 'make', dir]);
  return { vad: `${dir}/fsmn-vad-tiny`, punctuation: `${dir}/ct-punc-tiny` };
}

/** The numpy reference's logits [T, 248] of the tiny VAD model over the whole of `wav`, written to `out` as float32. */
export function referenceVadLogits(folder: string, wav: string, out: string): void {
  execFileSync(SPEECH_PYTHON, [VAD_PUNC_SCRIPT, 'vad-logits', folder, wav, out]);
}
