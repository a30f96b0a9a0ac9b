import { describe, expect, it } from 'vitest';
import { cifTimestamps, paraformerTokens } from '../../../src/speech/paraformer-decoder.js';
import { decodeSenseVoice } from '../../../src/speech/sensevoice-decoder.js';
import { sentencePostprocess } from '../../../src/speech/sentence-postprocess.js';

/** Logits whose argmax per row is `ids[row]`, over `vocab` ids. */
function logitsFor(ids: readonly number[], vocab: number, rows = ids.length): Float32Array {
  const out = new Float32Array(rows * vocab).fill(-3);
  ids.forEach((id, t) => (out[t * vocab + id] = 2));
  return out;
}

const SV = ['<blank>', '<|en|>', '<|zh|>', '<|NEUTRAL|>', '<|HAPPY|>', '<|Speech|>', '<|withitn|>', '<|woitn|>', '▁hello', '▁wor', 'ld', '你', '好'];

describe('decodeSenseVoice', () => {
  it('reads the four tags, collapses repeats, drops blanks and joins ▁-pieces with spaces', () => {
    const ids = [1, 3, 5, 7, 8, 8, 0, 8, 9, 10, 10, 0];
    const result = decodeSenseVoice(logitsFor(ids, SV.length), SV.length, ids.length, SV);
    expect(result).toEqual({ text: 'hello hello world', language: '<|en|>', emotion: '<|NEUTRAL|>', event: '<|Speech|>', itn: '<|woitn|>', richText: '<|en|><|NEUTRAL|><|Speech|>  hello hello world' });
  });

  it("ends the words with ITN's full stop: 。 for Chinese, . otherwise", () => {
    expect(decodeSenseVoice(logitsFor([2, 4, 5, 6, 11, 12], SV.length), SV.length, 6, SV).text).toBe('你好。');
    expect(decodeSenseVoice(logitsFor([1, 4, 5, 6, 8], SV.length), SV.length, 5, SV).text).toBe('hello.');
  });

  it('reads only the frames up to the row length, so padding decodes to nothing', () => {
    const ids = [1, 3, 5, 7, 8, 11, 12];
    const result = decodeSenseVoice(logitsFor(ids, SV.length), SV.length, 5, SV);
    expect(result.text).toBe('hello');
  });
});

const PF = ['<blank>', '<s>', '</s>', '你', '好', 'hel@@', 'lo', 'world', 'a', 'b', 'c'];

describe('paraformerTokens and sentencePostprocess', () => {
  it('drops blank and eos ids and cuts to token_num − predictor_bias', () => {
    expect(paraformerTokens(logitsFor([3, 0, 4, 2, 5, 6], PF.length), PF.length, 6, 1, PF)).toEqual(['你', '好', 'hel@@', 'lo']);
    expect(paraformerTokens(logitsFor([3, 4, 7, 7, 8], PF.length, 8), PF.length, 3, 1, PF)).toEqual(['你', '好']);
  });

  it('joins Chinese without spaces, BPE pieces into words, and single letters into an abbreviation', () => {
    expect(sentencePostprocess(['你', '好', 'hel@@', 'lo', 'world', 'a', 'b', 'c']).text).toBe('你好hello world ABC');
    expect(sentencePostprocess(['<s>', 'hel@@', 'lo', '你', '好', '</s>']).text).toBe('hello你好');
  });

  it('gives each word the span of its pieces, and joins words with spaces when timed', () => {
    const spans = [[0, 100], [100, 200], [200, 300], [300, 400]] as const;
    const sentence = sentencePostprocess(['你', 'hel@@', 'lo', 'world'], spans);
    expect(sentence).toEqual({ text: '你 hello world', words: ['你', 'hello', 'world'], spans: [[0, 100], [100, 300], [300, 400]] });
  });
});

describe('cifTimestamps (BiCifParaformer)', () => {
  it('turns CIF peaks into token spans: 20 ms frames, −1.5 frame offset, the tail cut at the midpoint of the silence', () => {
    const peaks = new Float32Array(60);
    for (const at of [10, 20, 25, 40]) peaks[at] = 1;
    // Fires at 8.5, 18.5, 23.5, 38.5 frames; the last token runs to (60 + 38.5) / 2 = 49.25.
    expect(cifTimestamps(peaks, 3)).toEqual([[170, 370], [370, 470], [470, 985]]);
  });

  it('splits a token held over 30 frames, and answers undefined when the peaks do not number tokens + 1', () => {
    const peaks = new Float32Array(80);
    for (const at of [2, 50, 78]) peaks[at] = 1;
    expect(cifTimestamps(peaks, 2)).toEqual([[10, 610], [970, 1600]]);
    expect(cifTimestamps(peaks, 5)).toBeUndefined();
  });
});
