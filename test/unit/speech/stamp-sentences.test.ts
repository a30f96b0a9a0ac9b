import { describe, expect, it } from 'vitest';
import { stampSentences } from '../../../src/speech/stamp-sentences.js';

describe("FunASR's stamp_sents (TimestampSentence)", () => {
  it('gives each word or Chinese character the next token time and closes a sentence at each mark', () => {
    expect(stampSentences('你好，世界。 how are', [[0, 100], [100, 200], [300, 400], [400, 500], [600, 700], [700, 800]])).toEqual([
      { text_seg: '你 好', punc: '，', start: 0, end: 200, ts_list: [[0, 100], [100, 200]] },
      { text_seg: '世 界', punc: '。', start: 300, end: 500, ts_list: [[300, 400], [400, 500]] },
      { text_seg: 'how are', punc: '', start: 600, end: 800, ts_list: [[600, 700], [700, 800]] },
    ]);
    expect(stampSentences('今天好？', [[10, 20], [20, 30], [30, 40]])).toEqual([{ text_seg: '今 天 好', punc: '？', start: 10, end: 40, ts_list: [[10, 20], [20, 30], [30, 40]] }]);
  });

  it('keeps the C++ quirks: a first sentence with no times spans -1..-1, a later one 0..0; a fullwidth ， glued to an English word stays in it', () => {
    expect(stampSentences('hello， world', [[0, 100], [100, 200]]).map((s) => s.text_seg)).toEqual(['hello， world']);
    expect(stampSentences('。a。。', [[5, 9]]).map((s) => [s.text_seg, s.start, s.end])).toEqual([['', -1, -1], ['a', 5, 9], ['', 0, 0]]);
  });
});
