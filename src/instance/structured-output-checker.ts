import { createHash } from 'node:crypto';
import { createError } from '../errors/index.js';
import type { StructuredOutput } from '../spec/structured-output.js';
import { grammarFor } from './structured-output-grammar.js';
import { loadXGrammar, type XGrammarInstance } from './xgrammar-library.js';

/** Specs remembered as valid (with their EBNF), as vLLM's xgrammar backend keeps a cache of compiled grammars. */
const CHECKED_SIZE = 256;

/** The cache key of a spec: a hash of its JSON. */
export function structuredOutputKey(output: StructuredOutput): string {
  return createHash('sha256').update(JSON.stringify(output)).digest('hex');
}

/**
 * Turns a spec into its EBNF on an xgrammar instance of its own: xgrammar rejects an invalid
 * schema, regex or EBNF by aborting its WASM instance, so that instance is thrown away (the error
 * becomes a 400 naming what xgrammar said) and an instance whose matchers serve running sequences
 * only ever compiles grammars already known to parse. No vocabulary is involved: the HTTP thread
 * checks a request's spec with it before answering (vLLM's frontend validates structured outputs
 * the same way before the engine sees them), and the instance before compiling.
 */
export class StructuredOutputChecker {
  private checker: Promise<XGrammarInstance> | undefined;
  private readonly checked = new Map<string, string>();

  /** The spec's grammar as EBNF; a ServeFnError (SF_ERR_STRUCTURED_OUTPUT_INVALID, 400) when xgrammar rejects it. */
  async ebnf(output: StructuredOutput, key = structuredOutputKey(output)): Promise<string> {
    const known = this.checked.get(key);
    if (known !== undefined) {
      // Most recently used last: the Map's order is the eviction order.
      this.checked.delete(key);
      this.checked.set(key, known);
      return known;
    }
    this.checker ??= loadXGrammar();
    const checker = await this.checker;
    let ebnf: string;
    try {
      const grammar = await grammarFor(checker.lib, output);
      ebnf = grammar.toString();
      grammar.dispose();
    } catch (err) {
      this.checker = undefined;
      throw createError('SF_ERR_STRUCTURED_OUTPUT_INVALID', output.kind, checker.lastFatal() ?? (err as Error).message, { cause: err });
    }
    if (this.checked.size >= CHECKED_SIZE) this.checked.delete(this.checked.keys().next().value!);
    this.checked.set(key, ebnf);
    return ebnf;
  }
}
