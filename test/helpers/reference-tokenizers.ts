import { readFileSync } from 'node:fs';

/*
 * Tokenizers written from their algorithms, for checking src/tokenizer/tokenizer.ts against something
 * that shares no code with the library it wraps: GPT-2's byte-level BPE (as Qwen3 configures it in
 * its tokenizer.json) and BERT's WordPiece (the BasicTokenizer + WordpieceTokenizer of the BERT
 * paper's reference code). Slow and simple on purpose.
 */

interface AddedTokenJson {
  readonly id: number;
  readonly content: string;
  readonly special: boolean;
}

interface TokenizerJson {
  readonly added_tokens: readonly AddedTokenJson[];
  readonly pre_tokenizer: { readonly pretokenizers: readonly { readonly type: string; readonly pattern?: { readonly Regex: string } }[] };
  readonly model: {
    readonly vocab: Readonly<Record<string, number>>;
    readonly merges?: readonly (string | readonly [string, string])[];
    readonly unk_token?: string;
    readonly max_input_chars_per_word?: number;
  };
}

/** GPT-2's bytes_to_unicode: printable Latin-1 bytes stand for themselves, the others for 256 + n. */
export function byteToUnicode(): string[] {
  const printable = (byte: number): boolean => (byte >= 0x21 && byte <= 0x7e) || (byte >= 0xa1 && byte <= 0xac) || (byte >= 0xae && byte <= 0xff);
  let next = 256;
  return Array.from({ length: 256 }, (_, byte) => String.fromCodePoint(printable(byte) ? byte : next++));
}

/** Rust regex's scoped `(?i:...)` group, which JavaScript (Node 20) lacks, spelled with classes: 's → '[sS]. */
function withoutScopedCaseInsensitivity(pattern: string): string {
  return pattern.replace(/\(\?i:([^()]*)\)/g, (_, body: string) => `(?:${body.replace(/[a-z]/g, (c) => `[${c}${c.toUpperCase()}]`)})`);
}

export class ReferenceByteLevelBpe {
  private readonly vocab: Readonly<Record<string, number>>;
  private readonly ranks = new Map<string, number>();
  private readonly added: readonly AddedTokenJson[];
  private readonly split: RegExp;
  readonly unicodeOfByte = byteToUnicode();
  readonly byteOfUnicode = new Map(this.unicodeOfByte.map((char, byte) => [char, byte]));

  constructor(tokenizerJsonPath: string) {
    const json = JSON.parse(readFileSync(tokenizerJsonPath, 'utf8')) as TokenizerJson;
    this.vocab = json.model.vocab;
    json.model.merges!.forEach((merge, rank) => {
      const [left, right] = typeof merge === 'string' ? merge.split(' ') : merge;
      this.ranks.set(`${left} ${right}`, rank);
    });
    // Longest first, so an added token that contains another is matched whole.
    this.added = [...json.added_tokens].sort((a, b) => b.content.length - a.content.length);
    const splitRule = json.pre_tokenizer.pretokenizers.find((step) => step.type === 'Split')!;
    this.split = new RegExp(withoutScopedCaseInsensitivity(splitRule.pattern!.Regex), 'gu');
  }

  /** Ids for `text`: added tokens matched on the raw text, the rest NFC-normalized, split, byte-mapped, merged. */
  encode(text: string): number[] {
    const ids: number[] = [];
    let plain = '';
    for (let at = 0; at < text.length; ) {
      const token = this.added.find((candidate) => text.startsWith(candidate.content, at));
      if (token === undefined) {
        plain += text[at]!;
        at += 1;
        continue;
      }
      ids.push(...this.encodePlain(plain), token.id);
      plain = '';
      at += token.content.length;
    }
    ids.push(...this.encodePlain(plain));
    return ids;
  }

  private encodePlain(text: string): number[] {
    const normalized = text.normalize('NFC');
    const pieces: string[] = [];
    let end = 0;
    for (const match of normalized.matchAll(this.split)) {
      if (match.index > end) pieces.push(normalized.slice(end, match.index));
      pieces.push(match[0]);
      end = match.index + match[0].length;
    }
    if (end < normalized.length) pieces.push(normalized.slice(end));
    return pieces.flatMap((piece) => this.merge([...Buffer.from(piece, 'utf8')].map((byte) => this.unicodeOfByte[byte]!)).map((symbol) => this.vocab[symbol]!));
  }

  /** BPE: merge the adjacent pair of lowest rank, everywhere it occurs, until no pair has a rank. */
  private merge(symbols: string[]): string[] {
    let word = symbols;
    for (;;) {
      let best: string | undefined;
      let bestRank = Infinity;
      for (let i = 0; i + 1 < word.length; i++) {
        const rank = this.ranks.get(`${word[i]} ${word[i + 1]}`);
        if (rank !== undefined && rank < bestRank) [best, bestRank] = [`${word[i]} ${word[i + 1]}`, rank];
      }
      if (best === undefined) return word;
      const merged: string[] = [];
      for (let i = 0; i < word.length; i++) {
        if (i + 1 < word.length && `${word[i]} ${word[i + 1]}` === best) {
          merged.push(word[i]! + word[i + 1]!);
          i += 1;
        } else merged.push(word[i]!);
      }
      word = merged;
    }
  }
}

export interface ReferenceWordPieceEncoding {
  readonly ids: number[];
  readonly typeIds: number[];
  readonly tokens: string[];
}

export class ReferenceWordPiece {
  private readonly vocab: Readonly<Record<string, number>>;
  private readonly unk: string;
  private readonly maxCharsPerWord: number;

  constructor(tokenizerJsonPath: string) {
    const json = JSON.parse(readFileSync(tokenizerJsonPath, 'utf8')) as TokenizerJson;
    this.vocab = json.model.vocab;
    this.unk = json.model.unk_token!;
    this.maxCharsPerWord = json.model.max_input_chars_per_word ?? 100;
  }

  id(token: string): number {
    return this.vocab[token]!;
  }

  /** [CLS] A [SEP] (B [SEP]) with type ids 0 for A's part and 1 for B's, as BERT's pair input. */
  encode(first: string, second?: string, addSpecialTokens = true): ReferenceWordPieceEncoding {
    const a = this.tokenize(first);
    const b = second === undefined ? undefined : this.tokenize(second);
    const tokens = addSpecialTokens ? ['[CLS]', ...a, '[SEP]', ...(b === undefined ? [] : [...b, '[SEP]'])] : [...a, ...(b ?? [])];
    const firstPart = addSpecialTokens ? a.length + 2 : a.length;
    return { tokens, ids: tokens.map((token) => this.id(token)), typeIds: tokens.map((_, index) => (index < firstPart ? 0 : 1)) };
  }

  /** BasicTokenizer then greedy longest-match-first WordPiece. */
  tokenize(text: string): string[] {
    return basicTokens(text).flatMap((word) => this.wordPieces(word));
  }

  private wordPieces(word: string): string[] {
    const chars = [...word];
    if (chars.length > this.maxCharsPerWord) return [this.unk];
    const pieces: string[] = [];
    for (let start = 0; start < chars.length; ) {
      let end = chars.length;
      let piece: string | undefined;
      for (; end > start; end--) {
        const candidate = (start > 0 ? '##' : '') + chars.slice(start, end).join('');
        if (this.vocab[candidate] !== undefined) {
          piece = candidate;
          break;
        }
      }
      if (piece === undefined) return [this.unk];
      pieces.push(piece);
      start = end;
    }
    return pieces;
  }
}

/** BERT's lowercasing with accents stripped: NFD, then the combining marks dropped. */
export function bertLowercase(text: string): string {
  return text.toLowerCase().normalize('NFD').replace(/\p{Mn}/gu, '');
}

/** BERT BasicTokenizer: clean, space out CJK ideographs, lowercase and strip accents, split on whitespace and punctuation. */
function basicTokens(text: string): string[] {
  let spaced = '';
  for (const char of text) {
    const code = char.codePointAt(0)!;
    if (code === 0 || code === 0xfffd || (/\p{C}/u.test(char) && !/\s/u.test(char))) continue;
    spaced += /\s/u.test(char) ? ' ' : isCjkIdeograph(code) ? ` ${char} ` : char;
  }
  return bertLowercase(spaced)
    .split(' ')
    .filter(Boolean)
    .flatMap((word) => word.split(/([\p{P}!-/:-@[-`{-~])/u).filter(Boolean));
}

/** The CJK Unified Ideographs blocks BERT's _is_chinese_char lists. */
function isCjkIdeograph(code: number): boolean {
  return (
    (code >= 0x4e00 && code <= 0x9fff) || (code >= 0x3400 && code <= 0x4dbf) || (code >= 0x20000 && code <= 0x2a6df) ||
    (code >= 0x2a700 && code <= 0x2b73f) || (code >= 0x2b740 && code <= 0x2b81f) || (code >= 0x2b820 && code <= 0x2ceaf) ||
    (code >= 0xf900 && code <= 0xfaff) || (code >= 0x2f800 && code <= 0x2fa1f)
  );
}
