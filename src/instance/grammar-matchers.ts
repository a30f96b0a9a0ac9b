import type * as XGrammar from '@mlc-ai/web-xgrammar';
import type { ConstraintVocabulary, StructuredOutput } from '../spec/structured-output.js';
import { StructuredOutputChecker, structuredOutputKey } from './structured-output-checker.js';
import { loadXGrammar } from './xgrammar-library.js';

/** Compiled grammars kept per model (vLLM's xgrammar backend keeps a cache of the same kind). */
const GRAMMAR_CACHE_SIZE = 256;

interface ModelGrammarEngine {
  readonly lib: typeof XGrammar;
  readonly compiler: XGrammar.GrammarCompiler;
}

/**
 * Structured outputs in the instance, beside the sampler, with xgrammar
 * (https://github.com/mlc-ai/xgrammar), the grammar engine vLLM uses by default, in its WASM build:
 * one TokenizerInfo and GrammarCompiler per model, built on the first constrained sequence (a
 * server whose clients never ask for one does not pay for it; a failed build is retried by the
 * next), a compiled grammar per distinct spec (keyed by a hash of it, least recently used evicted),
 * and a matcher per sequence. vLLM likewise compiles and masks in its engine core, not its API server.
 */
export class GrammarMatchers {
  private engine: Promise<ModelGrammarEngine> | undefined;
  private readonly checker = new StructuredOutputChecker();
  private readonly compiled = new Map<string, Promise<XGrammar.CompiledGrammar>>();

  constructor(private readonly vocabulary: () => Promise<ConstraintVocabulary>) {}

  /** A fresh matcher for one sequence. */
  async matcher(output: StructuredOutput): Promise<SequenceGrammar> {
    const { lib } = await this.modelEngine();
    return new SequenceGrammar(await lib.GrammarMatcher.createGrammarMatcher(await this.compiledGrammar(output)));
  }

  private modelEngine(): Promise<ModelGrammarEngine> {
    const building = (this.engine ??= (async () => {
      const [vocabulary, engine] = await Promise.all([this.vocabulary(), loadXGrammar()]);
      const info = await engine.lib.TokenizerInfo.createTokenizerInfo(
        [...vocabulary.encodedVocab], vocabulary.vocabType, false, vocabulary.vocabSize, [...vocabulary.stopTokenIds],
      );
      return { lib: engine.lib, compiler: await engine.lib.GrammarCompiler.createGrammarCompiler(info) };
    })());
    building.catch(() => {
      if (this.engine === building) this.engine = undefined;
    });
    return building;
  }

  private compiledGrammar(output: StructuredOutput): Promise<XGrammar.CompiledGrammar> {
    const key = structuredOutputKey(output);
    let entry = this.compiled.get(key);
    if (entry) {
      this.compiled.delete(key);
    } else {
      // Checked on a separate instance first: a spec xgrammar rejects never reaches the one the matchers run on.
      entry = Promise.all([this.checker.ebnf(output, key), this.modelEngine()]).then(([ebnf, { compiler }]) => compiler.compileGrammar(ebnf));
      entry.catch(() => this.compiled.delete(key));
      const oldest = this.compiled.size >= GRAMMAR_CACHE_SIZE ? this.compiled.keys().next().value : undefined;
      if (oldest !== undefined) {
        // A matcher holds its own reference to the compiled grammar: disposing the cache's handle does not end it.
        void this.compiled.get(oldest)!.then((grammar) => grammar.dispose(), () => undefined);
        this.compiled.delete(oldest);
      }
    }
    this.compiled.set(key, entry);
    return entry;
  }
}

/**
 * One sequence's matcher. It follows the sequence's output tokens: each sampled token is accepted
 * when sampled, and after a preemption (vLLM's RECOMPUTE) the matcher is reset and replays the
 * output the recomputed sequence carries. A mask is never asked of a terminated matcher: xgrammar
 * aborts its WASM instance on that.
 */
export class SequenceGrammar {
  /** Output tokens the matcher has accepted. */
  private accepted = 0;

  constructor(private readonly matcher: XGrammar.GrammarMatcher) {}

  /** Brings the matcher to `output` (the sequence's generated tokens so far): resets and replays when it was ahead. */
  follow(output: readonly number[]): void {
    if (output.length < this.accepted) {
      this.matcher.reset();
      this.accepted = 0;
    }
    while (this.accepted < output.length && this.acceptToken(output[this.accepted]!));
  }

  /** Allowed next tokens, one bit each (⌈vocab/32⌉ words); undefined once the grammar has ended. */
  async nextTokenBitmask(): Promise<Int32Array | undefined> {
    return this.matcher.isTerminated() ? undefined : this.matcher.getNextTokenBitmask();
  }

  /** Records a sampled token; false when the grammar rejects it or has ended. */
  acceptToken(tokenId: number): boolean {
    if (this.matcher.isTerminated() || !this.matcher.acceptToken(tokenId)) return false;
    this.accepted++;
    return true;
  }

  isTerminated(): boolean {
    return this.matcher.isTerminated();
  }

  dispose(): void {
    this.matcher.dispose();
  }
}
