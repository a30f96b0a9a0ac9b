import { describe, expect, it } from 'vitest';
import type { BackendSession } from '../../../src/backends/backend.js';
import { createTensor } from '../../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../../src/spec/tensor.js';
import { SpeechRecognizer } from '../../../src/speech/speech-recognizer.js';
import type { SpeechFolder } from '../../../src/speech/speech-folder.js';
import { DEFAULT_FRONT_END } from '../../../src/speech/speech-front-end.js';

const TOKENS = ['<blank>', '<s>', '</s>', 'hel@@', 'lo', 'world', 'x'];
const V = TOKENS.length;

/**
 * A BiCifParaformer-shaped session with designed outputs: each row's logits spell `hel@@ lo world`
 * (then `x` over the padding), its token_num is 4 (3 tokens + predictor_bias 1), and its upsampled CIF
 * fires at 3T'/8, /2, 5/8 and 7/8 of the row's own frames, so its timestamps depend on its own length.
 */
function bicifSession(calls: number[][]): BackendSession {
  const io = (names: string[]) => names.map((name) => ({ name, datatype: 'FP32' as const, shape: [-1] }));
  return {
    backend: 'fake',
    metadata: () => ({ inputs: io(['speech', 'speech_lengths']), outputs: io(['logits', 'token_num', 'us_alphas', 'us_cif_peak']) }),
    async run(inputs: Readonly<Record<string, Tensor>>): Promise<Record<string, Tensor>> {
      const lengths = Array.from(inputs.speech_lengths.data as Int32Array);
      calls.push(lengths);
      const batch = lengths.length;
      const longest = inputs.speech.shape[1];
      const positions = 6;
      const logits = new Float32Array(batch * positions * V).fill(-5);
      const peaks = new Float32Array(batch * 3 * longest);
      lengths.forEach((frames, b) => {
        [3, 4, 5, 6, 6, 6].forEach((id, n) => (logits[(b * positions + n) * V + id] = 0));
        const up = 3 * frames;
        for (const at of [3 / 8, 1 / 2, 5 / 8, 7 / 8]) peaks[b * 3 * longest + Math.floor(up * at)] = 1;
        // The padding of a shorter row: a peak a batch-wide reading would count.
        if (up < 3 * longest) peaks[b * 3 * longest + up] = 1;
      });
      return {
        logits: createTensor('logits', 'FP32', [batch, positions, V], logits),
        token_num: createTensor('token_num', 'INT32', [batch], Int32Array.from(lengths, () => 4)),
        us_cif_peak: createTensor('us_cif_peak', 'FP32', [batch, 3 * longest], peaks),
      };
    },
    dispose: async () => undefined,
  };
}

const folder: SpeechFolder = {
  dir: '/x', name: 'bicif', kind: 'BiCifParaformer', modelFile: '/x/model.onnx', device: 'cpu', frontEnd: DEFAULT_FRONT_END,
  cmvn: { shift: new Float32Array(560), scale: new Float32Array(560).fill(1) }, tokens: TOKENS, predictorBias: 1,
};

function noise(seconds: number): Float32Array {
  return Float32Array.from({ length: Math.round(16000 * seconds) }, (_, i) => Math.sin(i * 0.01) * 0.1);
}

describe('SpeechRecognizer on a BiCifParaformer-shaped model', () => {
  it('gives words with their times and per-token timestamps, and each row the same in a batch as alone', async () => {
    const calls: number[][] = [];
    const recognizer = new SpeechRecognizer(folder, bicifSession(calls));
    const short = { samples: noise(1), duration: 1 };
    const long = { samples: noise(2.4), duration: 2.4 };
    const alone = [...(await recognizer.transcribe([short])), ...(await recognizer.transcribe([long]))];
    const together = await recognizer.transcribe([short, long]);
    expect(calls.map((c) => c.length)).toEqual([1, 1, 2]);
    expect(together).toEqual(alone);
    // 1 s: 98 fbank frames → 17 LFR frames → 51 upsampled; fires at 19, 25, 31, 44 (− 1.5), × 20 ms;
    // the last token ends midway through the 8.5 frames of silence after it: (51 + 42.5) / 2 × 20 ms.
    expect(alone[0]).toEqual({
      text: 'hello world', richText: 'hello world', duration: 1,
      timestamp: [[350, 470], [470, 590], [590, 935]],
      words: [{ word: 'hello', start: 0.35, end: 0.59 }, { word: 'world', start: 0.59, end: 0.935 }],
    });
  });
});
