import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { Ajv } from 'ajv';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GenerativeModel, Instances, Model, ServeFnServer, type DecoderStepResult, type DecoderStepRow } from '../../src/index.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';

/**
 * A @GenerativeModel class on an inline instance (the HTTP thread's ModelHost, not a worker) gets
 * the folder's grammar vocabulary too. Its step hook answers flat logits, so greedy sampling takes
 * the lowest token id the grammar allows: unmasked, that is byte '!' for ever; masked, JSON that
 * validates and ends with the end-of-sequence token.
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-class-inline-structured-'));
let vocab = 0;
let server: ServeFnServer;

@Model({ name: 'flat' })
@Instances(1, { inline: true })
@GenerativeModel({ folder: 'tiny' })
class FlatLogits {
  step(rows: readonly DecoderStepRow[]): DecoderStepResult {
    return { rows: rows.map((row) => (row.logits === 'none' ? undefined : new Float32Array(vocab * (row.logits === 'all' ? row.tokenIds.length : 1)))) };
  }

  release(): void {}
}

beforeAll(async () => {
  vocab = writeDecoderFolder(join(root, 'tiny')).weights.shape.vocab;
  // The class is inline; the module only names the folder its paths start from.
  writeFileSync(join(root, 'index.ts'), 'export {};\n');
  server = new ServeFnServer({ models: [FlatLogits], moduleUrl: pathToFileURL(join(root, 'index.ts')).href, collectProcessMetrics: false });
  await server.start();
}, 60_000);
afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

describe('structured outputs from an inline @GenerativeModel class', () => {
  it('masks its flat logits with the JSON schema: the answer validates and stops', async () => {
    const schema = { type: 'object', properties: { city: { enum: ['Paris', 'Lyon'] }, capital: { type: 'boolean' } }, required: ['city', 'capital'], additionalProperties: false };
    const res = await server.app.inject({
      method: 'POST', url: '/v1/chat/completions',
      payload: {
        model: 'flat', messages: [{ role: 'user', content: 'Capital?' }], temperature: 0, max_tokens: 64, chat_template_kwargs: { enable_thinking: false },
        response_format: { type: 'json_schema', json_schema: { name: 'answer', schema } },
      },
    });
    expect(res.statusCode, res.body).toBe(200);
    const choice = res.json().choices[0];
    expect(choice.finish_reason).toBe('stop');
    const validate = new Ajv().compile(schema);
    expect(validate(JSON.parse(choice.message.content)), JSON.stringify(validate.errors)).toBe(true);
  }, 60_000);
});
