import { createHash } from 'node:crypto';
import type * as XGrammar from '@mlc-ai/web-xgrammar';
import { createError } from '../../errors/index.js';
import type { ConstraintCompiler, StructuredOutput, TokenConstraint } from '../text-generator.js';
import type { ConstraintVocabulary } from './constraint-vocabulary.js';
import { loadXGrammar, type XGrammarInstance } from './xgrammar-library.js';

/** Compiled grammars kept per model (vLLM's xgrammar backend keeps a cache of the same kind). */
const GRAMMAR_CACHE_SIZE = 256;

/**
 * Structured outputs with xgrammar (https://github.com/mlc-ai/xgrammar), the grammar engine vLLM
 * uses by default, in its WASM build: one TokenizerInfo and GrammarCompiler per model, a compiled
 * grammar per distinct output spec (keyed by a hash of it), a GrammarMatcher per sequence.
 *
 * A request's spec is first turned into a grammar on a separate instance of the library: xgrammar
 * rejects an invalid schema, regex or EBNF by aborting its WASM instance, so that instance is
 * thrown away (the error becomes a 400 naming what xgrammar said), and the model's instance, whose
 * matchers serve running sequences, only ever compiles grammars already known to parse.
 */
export class XGrammarConstraintCompiler {
  private checker: Promise<XGrammarInstance> | undefined;
  private readonly compiled = new Map<string, Promise<XGrammar.CompiledGrammar>>();

  private constructor(
    private readonly engine: XGrammarInstance,
    private readonly compiler: XGrammar.GrammarCompiler,
    private readonly vocabSize: number,
  ) {}

  static async create(vocabulary: ConstraintVocabulary): Promise<XGrammarConstraintCompiler> {
    const engine = await loadXGrammar();
    const info = await engine.lib.TokenizerInfo.createTokenizerInfo(
      [...vocabulary.encodedVocab], vocabulary.vocabType, false, vocabulary.vocabSize, [...vocabulary.stopTokenIds],
    );
    return new XGrammarConstraintCompiler(engine, await engine.lib.GrammarCompiler.createGrammarCompiler(info), vocabulary.vocabSize);
  }

  /** The `ConstraintCompiler` a ServedGenerator carries. */
  readonly compile: ConstraintCompiler = async (output) => {
    const compiled = await this.compiledGrammar(output);
    const matcher = await this.engine.lib.GrammarMatcher.createGrammarMatcher(compiled);
    return XGrammarConstraint.create(matcher, this.vocabSize);
  };

  private compiledGrammar(output: StructuredOutput): Promise<XGrammar.CompiledGrammar> {
    const key = createHash('sha256').update(JSON.stringify(output)).digest('hex');
    let entry = this.compiled.get(key);
    if (entry) {
      // Most recently used last: the Map's order is the eviction order.
      this.compiled.delete(key);
    } else {
      entry = this.checkedGrammar(output).then((ebnf) => this.compiler.compileGrammar(ebnf));
      entry.catch(() => this.compiled.delete(key));
      const oldest = this.compiled.size >= GRAMMAR_CACHE_SIZE ? this.compiled.keys().next().value : undefined;
      if (oldest !== undefined) {
        void this.compiled.get(oldest)!.then((grammar) => grammar.dispose(), () => undefined);
        this.compiled.delete(oldest);
      }
    }
    this.compiled.set(key, entry);
    return entry;
  }

  /** The spec as EBNF, made on the checking instance; a ServeFnError (400) when xgrammar rejects it. */
  private async checkedGrammar(output: StructuredOutput): Promise<string> {
    this.checker ??= loadXGrammar();
    const checker = await this.checker;
    try {
      const grammar = await grammarFor(checker.lib, output);
      const ebnf = grammar.toString();
      grammar.dispose();
      return ebnf;
    } catch (err) {
      this.checker = undefined;
      throw createError('SF_ERR_STRUCTURED_OUTPUT_INVALID', output.kind, checker.lastFatal() ?? (err as Error).message, { cause: err });
    }
  }
}

/**
 * How each spec becomes a grammar. JSON follows vLLM's xgrammar backend (strict: no properties
 * the schema does not name) with compact single-line output (`", "` and `": "`, Python's
 * json.dumps separators): free whitespace lets a small model loop on spaces, which vLLM's
 * `disable_any_whitespace` exists to stop. Regex and choice use xgrammar's structural tags.
 */
async function grammarFor(lib: typeof XGrammar, output: StructuredOutput): Promise<XGrammar.Grammar> {
  switch (output.kind) {
    case 'json':
      return output.schema === true
        ? lib.Grammar.builtinJSONGrammar()
        : lib.Grammar.fromJSONSchema(JSON.stringify(output.schema), false, -1, [', ', ': '], true);
    case 'regex':
      return lib.Grammar.fromStructuralTag({ type: 'structural_tag', format: { type: 'regex', pattern: output.pattern } });
    case 'choice':
      if (output.choices.length === 0) throw new Error('choice needs at least one string');
      return lib.Grammar.fromStructuralTag({
        type: 'structural_tag',
        format: { type: 'or', elements: output.choices.map((value) => ({ type: 'const_string', value })) },
      });
    case 'grammar':
      return lib.Grammar.fromEBNF(output.ebnf);
  }
}

type EmbindIntVector = { size(): number; get(i: number): number; delete(): void };

/** A matcher's WASM memory is freed when its sequence's constraint is collected: the contract has no end-of-sequence call. */
const matchers = new FinalizationRegistry<XGrammar.GrammarMatcher>((matcher) => matcher.dispose());

/**
 * One sequence's matcher. `nextTokenBitmask()` is synchronous in the contract, while the library's
 * is async only to await its own initialisation, and running it later is unsafe: a mask asked of
 * a matcher that has since accepted its stop token aborts the WASM instance. So the mask is
 * computed when asked, through the matcher's native handle, which the library's own method calls.
 */
class XGrammarConstraint implements TokenConstraint {
  private mask: Int32Array | undefined;

  private constructor(private readonly matcher: XGrammar.GrammarMatcher, private readonly vocabSize: number) {}

  static create(matcher: XGrammar.GrammarMatcher, vocabSize: number): XGrammarConstraint {
    const constraint = new XGrammarConstraint(matcher, vocabSize);
    matchers.register(constraint, matcher);
    return constraint;
  }

  nextTokenBitmask(): Int32Array {
    if (this.matcher.isTerminated()) throw new Error('the grammar has ended: no next token');
    this.mask ??= this.computeNow();
    return this.mask;
  }

  acceptToken(tokenId: number): boolean {
    if (this.matcher.isTerminated() || !this.matcher.acceptToken(tokenId)) return false;
    this.mask = undefined;
    return true;
  }

  isTerminated(): boolean {
    return this.matcher.isTerminated();
  }

  private computeNow(): Int32Array {
    const handle = (this.matcher as unknown as { handle: { GetNextTokenBitmask(vocabSize: number): EmbindIntVector } }).handle;
    const vector = handle.GetNextTokenBitmask(this.vocabSize);
    try {
      return Int32Array.from({ length: vector.size() }, (_, i) => vector.get(i));
    } finally {
      vector.delete();
    }
  }
}

/**
 * A model's `ConstraintCompiler` whose xgrammar compiler (the WASM library, the TokenizerInfo over
 * the whole vocabulary) is built on the first structured-output request, so a server whose clients
 * never ask for one does not pay for it at start-up. A failed build is retried by the next request.
 */
export function lazyConstraintCompiler(vocabulary: () => Promise<ConstraintVocabulary>): ConstraintCompiler {
  let compiler: Promise<XGrammarConstraintCompiler> | undefined;
  return async (output) => {
    compiler ??= vocabulary().then((v) => XGrammarConstraintCompiler.create(v));
    const building = compiler;
    building.catch(() => {
      if (compiler === building) compiler = undefined;
    });
    return (await building).compile(output);
  };
}
