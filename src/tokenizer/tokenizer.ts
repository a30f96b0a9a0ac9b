import { readFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import type { Encoding, Tokenizer } from 'tokenizers';
import { createError } from '../errors/index.js';
import type { CancelSignal } from '../spec/cancel-signal.js';

/*
 * Library choice (measured in bench/text/tokenizers.ts, docs/BENCHMARKS.md "Text: tokenizer
 * throughput"): `tokenizers`, Hugging Face's Rust tokenizers through their Node binding, which is
 * what TEI itself runs, so ids, offsets, pair templates and special tokens are HF's own. The pure-JS
 * `@huggingface/tokenizers` returns neither offsets (TEI's /tokenize needs them) nor truncation,
 * and was slower on Qwen3's byte-level BPE.
 */

export interface EncodeOptions {
  /** default true: add the tokenizer's special tokens (CLS/SEP, BOS/EOS...) as its post-processor says */
  readonly addSpecialTokens?: boolean;
  /** Cut to at most this many tokens, special tokens included (pairs: LongestFirst, as HF tokenizers/TEI do). */
  readonly maxLength?: number;
  /** Which end loses tokens when cutting; default 'right'. */
  readonly direction?: 'left' | 'right';
  /** Whether the encoding must carry `offsets` (TEI's /tokenize); they cost as much as the other arrays together. */
  readonly offsets?: boolean;
}

export interface TextEncoding {
  readonly ids: Uint32Array;
  /** token_type_ids (0s for single texts, 1s for the 2nd of a pair on BERT) */
  readonly typeIds: Uint32Array;
  /**
   * UTF-8 BYTE offsets [start, stop) into the text the token came from (the pair's own text for the
   * 2nd one); null for special tokens. Present when the encode asked for them (`offsets: true`).
   */
  readonly offsets?: ReadonlyArray<readonly [number, number] | null>;
  /** 1 = special token */
  readonly special: Uint8Array;
  /** For pairs: which text each token came from (0 or 1), -1 for specials; single texts: 0/-1 */
  readonly sequenceIds: Int8Array;
  /** Tokens before cutting (to tell "too long" from "fits") */
  readonly untruncatedLength: number;
}

/** How many special tokens the post-processor adds around one text and around a pair. */
interface SpecialTokenCounts {
  readonly single: number;
  readonly pair: number;
}

/**
 * What a text model asks of its tokenizer: a TextTokenizer in this thread, or one on an instance
 * of its own (text/instance-tokenizer.ts), which encodes off the HTTP thread.
 */
export interface TextTokenization {
  readonly vocabSize: number;
  readonly padId: number;
  specialTokenCount(pair: boolean): number;
  /** `signal` drops a text still queued for a tokenizer on an instance once its client has gone; one in this thread encodes at once. */
  encode(text: string, options?: EncodeOptions, signal?: CancelSignal): Promise<TextEncoding>;
  encodePair(first: string, second: string, options?: EncodeOptions, signal?: CancelSignal): Promise<TextEncoding>;
  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string>;
  idToToken(id: number): string | undefined;
  /** Whether it can encode now: one on an instance, once its instance runs; one in this thread, always (absent). */
  ready?(): boolean;
}

export class TextTokenizer implements TextTokenization {
  readonly vocabSize: number;
  readonly padId: number;

  private constructor(
    private readonly native: Tokenizer,
    padId: number,
    private readonly specials: SpecialTokenCounts,
  ) {
    this.vocabSize = native.getVocabSize(true);
    this.padId = padId;
  }

  /** Reads tokenizer.json (and tokenizer_config.json / special_tokens_map.json beside it, when present). Throws SF_ERR_TOKENIZER_INVALID naming the file. */
  static async fromFile(path: string): Promise<TextTokenizer> {
    const file = await readJson(path);
    if (file === undefined) throw createError('SF_ERR_TOKENIZER_INVALID', path, 'file not found');
    // Imported here: its native library holds memory for the server's life, and most servers load no text model.
    const { Tokenizer: NativeTokenizer } = await import('tokenizers');
    let native: Tokenizer;
    try {
      native = NativeTokenizer.fromString(file.text);
    } catch (cause) {
      throw createError('SF_ERR_TOKENIZER_INVALID', path, (cause as Error).message, { cause });
    }
    // Truncation and padding written in the file would be shared by every encode in flight;
    // encode() cuts per call instead and the batcher pads, so both are switched off here.
    native.disableTruncation();
    native.disablePadding();
    const padId = await padIdOf(native, file.json, dirname(path));
    try {
      return new TextTokenizer(native, padId, await specialTokenCounts(native));
    } catch (cause) {
      throw createError('SF_ERR_TOKENIZER_INVALID', path, `cannot encode an empty text: ${(cause as Error).message}`, { cause });
    }
  }

  /** How many special tokens encode adds to one text / to a pair (for budgeting). */
  specialTokenCount(pair: boolean): number {
    return pair ? this.specials.pair : this.specials.single;
  }

  encode(text: string, options: EncodeOptions = {}): Promise<TextEncoding> {
    return this.encodeTexts(text, undefined, options);
  }

  encodePair(first: string, second: string, options: EncodeOptions = {}): Promise<TextEncoding> {
    return this.encodeTexts(first, second, options);
  }

  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    return this.native.decode([...ids], skipSpecialTokens);
  }

  idToToken(id: number): string | undefined {
    return this.native.idToToken(id) ?? undefined;
  }

  /**
   * Each text is encoded without special tokens, cut here, then given its special tokens by the
   * library's post-processor: the steps of HF's `TokenizerImpl::encode`, but the cut reads this
   * call's options instead of the shared tokenizer's truncation setting, so concurrent encodes with
   * different limits cannot see each other's. (Encoding whole texts first and again only when too
   * long cost more on bench/text/tokenizers.ts's corpus, where many texts are cut.) A maxLength
   * at or below the special-token count leaves only the special tokens.
   */
  private async encodeTexts(first: string, second: string | undefined, options: EncodeOptions): Promise<TextEncoding> {
    const addSpecialTokens = options.addSpecialTokens ?? true;
    const texts: [string, string?] = second === undefined ? [first] : [first, second];
    let bare = await Promise.all(texts.map((text) => this.encodeBare(text!)));
    let starts = [0, 0];
    const specials = addSpecialTokens ? this.specialTokenCount(second !== undefined) : 0;
    const lengths = bare.map((encoding) => encoding.getLength());
    const untruncatedLength = lengths.reduce((sum, length) => sum + length, specials);
    if (options.maxLength !== undefined && untruncatedLength > options.maxLength) {
      const kept = keptLengths(lengths, Math.max(0, options.maxLength - specials));
      const direction = options.direction ?? 'right';
      bare.forEach((encoding, index) => encoding.truncate(kept[index]!, 0, direction));
      // `truncate` keeps what it cut as overflowing pieces, and post-processing a pair merges every
      // piece of one text with every piece of the other (HF's `Encoding::merge_with`), synchronously:
      // with both texts cut, quadratic work on the event loop. Each is re-encoded as its kept span.
      if (kept.length === 2 && kept.every((keep, index) => keep < lengths[index]!)) {
        const spans = await Promise.all(bare.map((encoding, index) => this.keptSpan(texts[index]!, encoding, direction)));
        bare = spans.map((span) => span.encoding);
        starts = spans.map((span) => span.start);
      }
    }
    return encodedTexts(this.native.postProcess(bare[0]!, bare[1] ?? null, addSpecialTokens), texts, untruncatedLength, starts, options.offsets ?? false);
  }

  /**
   * The kept part of a cut encoding, encoded again on its own so it carries no overflowing pieces,
   * and where it starts in the text (in code points). Where the span alone tokenizes otherwise (a
   * left cut inside a word), the cut encoding is kept, pieces and all.
   */
  private async keptSpan(text: string, cut: Encoding, direction: 'left' | 'right'): Promise<{ encoding: Encoding; start: number }> {
    const offsets = cut.getOffsets();
    const codePoints = Array.from(text);
    // Nothing kept is the empty span, from either end.
    const start = direction === 'left' && offsets.length > 0 ? offsets[0]![0]! : 0;
    const end = offsets.length === 0 ? 0 : direction === 'left' ? codePoints.length : offsets[offsets.length - 1]![1]!;
    const again = await this.encodeBare(codePoints.slice(start, end).join(''));
    const ids = cut.getIds();
    const same = again.getLength() === ids.length && again.getIds().every((id, index) => id === ids[index]);
    return same ? { encoding: again, start } : { encoding: cut, start: 0 };
  }

  private async encodeBare(text: string): Promise<Encoding> {
    try {
      return await this.native.encode(text, null, { addSpecialTokens: false });
    } catch (cause) {
      throw createError('SF_ERR_TOKENIZATION_FAILED', (cause as Error).message, { cause });
    }
  }
}

/**
 * HF tokenizers' TruncationStrategy::LongestFirst (`truncate_encodings`, tokenizers/src/utils/
 * truncation.rs) for a budget of content tokens: a lone text keeps `budget`; of a pair, the shorter
 * text stays whole when the longer one can take the rest, else both get half, the longer one the odd
 * token. The binding's own truncation (0.23.2) first stops tokenizing each text at max_length tokens
 * and only then compares lengths, so for a text longer than that its pair cut can differ; this
 * follows the strategy on the texts' real lengths.
 */
function keptLengths(lengths: readonly number[], budget: number): number[] {
  if (lengths.length === 1) return [budget];
  const [firstLength, secondLength] = lengths as [number, number];
  const swapped = firstLength > secondLength;
  let shorter = swapped ? secondLength : firstLength;
  let longer = shorter > budget ? shorter : Math.max(shorter, budget - shorter);
  if (shorter + longer > budget) {
    shorter = Math.floor(budget / 2);
    longer = shorter + (budget % 2);
  }
  return swapped ? [longer, shorter] : [shorter, longer];
}

/**
 * One encode's answer, a plain object of typed arrays, so it crosses a thread boundary as it is
 * (text/instance-tokenizer.ts). Offsets are read from the library only when asked for: they cost as
 * much as all the other arrays together (bench/text/tokenizers.ts) and only /tokenize needs them.
 */
function encodedTexts(encoding: Encoding, texts: readonly [string, string?], untruncatedLength: number, starts: readonly number[], withOffsets: boolean): TextEncoding {
  const special = new Uint8Array(encoding.getSpecialTokensMask());
  // postProcess of a pair encoded text by text loses the first text's sequence ids (the binding
  // answers null for them, 0.23.2), while the second's and the special mask are right: every token
  // that is neither special nor from the second text is from the first. (Counted loops: V8 runs
  // TypedArray.from with a map function through the iterator protocol, several times slower.)
  const sequenceIds = new Int8Array(special.length);
  const second = texts.length === 1 ? undefined : encoding.getSequenceIds();
  for (let i = 0; i < special.length; i++) sequenceIds[i] = special[i] === 1 ? -1 : (second?.[i] ?? 0);
  return {
    ids: new Uint32Array(encoding.getIds()),
    typeIds: new Uint32Array(encoding.getTypeIds()),
    special,
    sequenceIds,
    untruncatedLength,
    ...(withOffsets ? { offsets: byteOffsets(encoding, texts, sequenceIds, starts) } : {}),
  };
}

/** `starts`: where in each text, in code points, the part that was encoded begins (a re-encoded kept span). */
function byteOffsets(encoding: Encoding, texts: readonly [string, string?], sequenceIds: Int8Array, starts: readonly number[]): (readonly [number, number] | null)[] {
  const tables = texts.map((text) => byteOffsetTable(text!));
  return encoding.getOffsets().map(([from, to], index) => {
    const sequence = sequenceIds[index]!;
    if (sequence < 0) return null;
    const shift = starts[sequence] ?? 0;
    const [start, stop] = [from! + shift, to! + shift];
    const table = tables[sequence];
    return table === undefined ? [start, stop] : [table[start]!, table[stop]!];
  });
}

/**
 * The binding answers offsets in Unicode code points (it calls Rust's `encode_char_offsets`); TEI's
 * /tokenize answers UTF-8 byte offsets, so this maps code point i to the byte where it starts.
 * Undefined for ASCII texts, where both units agree.
 */
function byteOffsetTable(text: string): Uint32Array | undefined {
  if (Buffer.byteLength(text) === text.length) return undefined;
  const table: number[] = [0];
  let bytes = 0;
  for (const char of text) {
    const codePoint = char.codePointAt(0)!;
    bytes += codePoint < 0x80 ? 1 : codePoint < 0x800 ? 2 : codePoint < 0x10000 ? 3 : 4;
    table.push(bytes);
  }
  return Uint32Array.from(table);
}

/** What post-processing adds to empty texts is what it adds to any text (HF's `num_special_tokens_to_add`, which the binding lacks). */
async function specialTokenCounts(native: Tokenizer): Promise<SpecialTokenCounts> {
  const nothing = (): Promise<Encoding> => native.encode('', null, { addSpecialTokens: false });
  return {
    single: native.postProcess(await nothing(), null, true).getLength(),
    pair: native.postProcess(await nothing(), await nothing(), true).getLength(),
  };
}

/**
 * tokenizer.json's padding.pad_id, else the pad_token that tokenizer_config.json or
 * special_tokens_map.json name (transformers' files beside it), else 0.
 */
async function padIdOf(native: Tokenizer, json: TokenizerJson, dir: string): Promise<number> {
  if (typeof json.padding?.pad_id === 'number') return json.padding.pad_id;
  for (const file of ['tokenizer_config.json', 'special_tokens_map.json']) {
    const token = (await readJson(join(dir, file)))?.json.pad_token;
    const content = typeof token === 'string' ? token : typeof token?.content === 'string' ? token.content : undefined;
    const id = content === undefined ? null : native.tokenToId(content);
    if (typeof id === 'number') return id;
  }
  return 0;
}

interface TokenizerJson {
  readonly padding?: { readonly pad_id?: unknown } | null;
  readonly pad_token?: string | { readonly content?: unknown } | null;
}

/** The file and its parsed object, undefined when it does not exist; SF_ERR_TOKENIZER_INVALID naming it when it cannot be read or parsed. */
async function readJson(path: string): Promise<{ text: string; json: TokenizerJson } | undefined> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (cause) {
    if ((cause as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw createError('SF_ERR_TOKENIZER_INVALID', path, (cause as Error).message, { cause });
  }
  try {
    const parsed: unknown = JSON.parse(text);
    if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new Error('not a JSON object');
    return { text, json: parsed as TokenizerJson };
  } catch (cause) {
    throw createError('SF_ERR_TOKENIZER_INVALID', path, (cause as Error).message, { cause });
  }
}
