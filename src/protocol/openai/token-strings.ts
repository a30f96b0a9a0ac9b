import type { GeneratedToken, PromptTokenizer, TokenLogprob } from '../../generation/text-generator.js';

/**
 * The text of single tokens for logprobs, decoded as vLLM decodes them (a token that holds part of
 * a UTF-8 character reads as U+FFFD, its bytes say what it is), cached for the request: the same
 * ids recur among the alternatives.
 */
export class TokenStrings {
  private readonly cache = new Map<number, Promise<string>>();

  constructor(private readonly tokenizer: PromptTokenizer) {}

  text(id: number): Promise<string> {
    let text = this.cache.get(id);
    if (!text) {
      text = this.tokenizer.decode([id], false).catch(() => this.tokenizer.tokenText(id) ?? '');
      this.cache.set(id, text);
    }
    return text;
  }
}

/** OpenAI's ChatCompletionTokenLogprob: `{token, logprob, bytes, top_logprobs[]}`. */
export interface ChatTokenLogprob {
  readonly token: string;
  readonly logprob: number;
  readonly bytes: number[];
  readonly top_logprobs: { token: string; logprob: number; bytes: number[] }[];
}

/** vLLM writes -9999.0 for a logprob of -inf, which JSON cannot carry. */
function finite(logprob: number): number {
  return Number.isFinite(logprob) ? logprob : -9999;
}

async function entry(strings: TokenStrings, t: TokenLogprob): Promise<{ token: string; logprob: number; bytes: number[] }> {
  const token = await strings.text(t.tokenId);
  return { token, logprob: finite(t.logprob), bytes: [...Buffer.from(token, 'utf8')] };
}

export async function chatLogprobs(strings: TokenStrings, tokens: readonly GeneratedToken[]): Promise<ChatTokenLogprob[]> {
  return Promise.all(tokens.map(async (t) => ({ ...(await entry(strings, t)), top_logprobs: await Promise.all((t.top ?? []).map((alt) => entry(strings, alt))) })));
}

/** The legacy completions shape: parallel lists, `top_logprobs` as {token: logprob} maps, offsets into the choice's text. */
export interface CompletionLogprobs {
  tokens: string[];
  token_logprobs: (number | null)[];
  top_logprobs: (Record<string, number> | null)[];
  text_offset: number[];
}

export function emptyCompletionLogprobs(): CompletionLogprobs {
  return { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] };
}

/** Appends tokens to a completions logprobs record; `offset` is where their text starts in the choice's text. An undefined token is a first prompt token (no logprob). */
export async function appendCompletionLogprobs(strings: TokenStrings, into: CompletionLogprobs, tokens: readonly (GeneratedToken | undefined)[], ids: readonly number[], offset: number): Promise<number> {
  let at = offset;
  for (let i = 0; i < tokens.length; i++) {
    const t = tokens[i];
    const text = await strings.text(t?.tokenId ?? ids[i]);
    into.tokens.push(text);
    into.text_offset.push(at);
    at += text.length;
    into.token_logprobs.push(t ? finite(t.logprob) : null);
    if (!t) {
      into.top_logprobs.push(null);
      continue;
    }
    // OpenAI's legacy `logprobs: 0` still lists the chosen token.
    const top: Record<string, number> = {};
    for (const alt of t.top?.length ? t.top : [t]) top[await strings.text(alt.tokenId)] = finite(alt.logprob);
    into.top_logprobs.push(top);
  }
  return at;
}
