import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxBackend } from '../../../src/backends/onnx/onnx-backend.js';
import type { BackendSession } from '../../../src/backends/backend.js';
import { CtPunctuation, punctuateWords, splitWords } from '../../../src/speech/ct-punctuation.js';
import { readPunctuationFolder } from '../../../src/speech/speech-chain-folders.js';
import { makeTinyVadAndPunctuation, missingPython } from '../../helpers/speech-python.js';

const PUNC = ['<unk>', '_', '，', '。', '？', '、'];

/** A model whose punctuation after a word is fixed by the word: `marks[word]`, else none. */
function byWord(words: readonly string[], marks: Readonly<Record<string, string>>, windows: number[][]) {
  return async (ids: Int32Array): Promise<Int32Array> => {
    windows.push(Array.from(ids));
    return Int32Array.from(ids, (id) => PUNC.indexOf(marks[words[id]] ?? '_'));
  };
}

describe('CT-Transformer punctuation windows (FunASR punc_bin.py)', () => {
  it('splits code-mixed text: each non-ASCII character a word, ASCII runs one word', () => {
    expect(splitWords(' hello world今天 ok好 ')).toEqual(['hello', 'world', '今', '天', 'ok', '好']);
  });

  it('runs 20-word windows, keeps text up to the last sentence end and carries the rest into the next window', async () => {
    const words = Array.from({ length: 45 }, (_, i) => `w${i}`);
    const windows: number[][] = [];
    const text = await punctuateWords(words, words.map((_, i) => i), PUNC, byWord(words, { w7: '。', w30: '？' }, windows));
    // 20 words; then w8..w19 carried + 20 new; then w31..w39 carried + the last 5.
    expect(windows.map((w) => [w[0], w.length])).toEqual([[0, 20], [8, 32], [31, 14]]);
    const run = (from: number, to: number): string => words.slice(from, to + 1).join(' ');
    // FunASR joins ASCII words with a space within a window only, and ends the text with 。.
    expect(text).toBe(`${run(0, 7)}。${run(8, 30)}？${run(31, 44)}。`);
  });

  it('past 200 words with no sentence end, cuts at the last comma, made a period', async () => {
    const words = Array.from({ length: 250 }, (_, i) => `c${i}`);
    const marks = Object.fromEntries(words.filter((_, i) => i % 10 === 5).map((w) => [w, '，']));
    const windows: number[][] = [];
    const text = await punctuateWords(words, words.map((_, i) => i), PUNC, byWord(words, marks, windows));
    expect(windows.map((w) => w.length)).toEqual([20, 40, 60, 80, 100, 120, 140, 160, 180, 200, 220, 24, 34]);
    const span = (from: number, to: number): string => words.slice(from, to + 1).map((w, i) => (i > 0 ? ' ' : '') + w + (marks[w] ?? '')).join('');
    expect(text).toBe(`${span(0, 214)} c215。${span(216, 249)}。`);
  });

  it('ends the text with 。, turning a final ， or 、 into it, and keeps a final ？', async () => {
    const words = ['a', 'b'];
    const ids = [0, 1];
    expect(await punctuateWords(words, ids, PUNC, byWord(words, { b: '，' }, []))).toBe('a b。');
    expect(await punctuateWords(words, ids, PUNC, byWord(words, { b: '？' }, []))).toBe('a b？');
    expect(await punctuateWords([], [], PUNC, byWord(words, {}, []))).toBe('');
  });
});

const missing = missingPython(['onnx', 'numpy']);

describe.skipIf(missing)('CT-Transformer on a tiny export with known logits', () => {
  let dir = '';
  let session: BackendSession;
  let punctuation: CtPunctuation;

  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'ct-punc-'));
    const folder = readPunctuationFolder(makeTinyVadAndPunctuation(dir).punctuation);
    session = await new OnnxBackend().load(folder.modelFile, { options: { intraOpNumThreads: 1 } });
    punctuation = new CtPunctuation(folder, session);
  }, 60_000);
  afterAll(async () => {
    await session?.dispose();
    rmSync(dir, { recursive: true, force: true });
  });

  it('reads punc_list from config.yaml, showing , and ? as ， and ？', () => {
    expect(punctuation.folder.puncList).toEqual(['<unk>', '_', '，', '。', '？', '、']);
  });

  it('punctuates text by the model\'s argmax per word; an unknown word takes the last token\'s id; ASCII words keep their space after a mark, as FunASR joins them', async () => {
    expect(await punctuation.punctuate('hello world how are you 今天好吗')).toBe('hello， world。 how are you？今天、好吗？');
    expect(await punctuation.punctuate('hello stranger')).toBe('hello， stranger。');
  });
});
