import type * as XGrammar from '@mlc-ai/web-xgrammar';
import type { StructuredOutput } from '../spec/structured-output.js';

/**
 * How each spec becomes an xgrammar grammar: on the HTTP thread to check it (a 400 for a bad one),
 * and in the instance to compile it over the vocabulary. JSON follows vLLM's xgrammar backend
 * (strict: no properties the schema does not name) with compact single-line output (`", "` and
 * `": "`, Python's json.dumps separators): free whitespace lets a small model loop on spaces,
 * which vLLM's `disable_any_whitespace` exists to stop. Regex and choice use xgrammar's structural tags.
 */
export async function grammarFor(lib: typeof XGrammar, output: StructuredOutput): Promise<XGrammar.Grammar> {
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
