import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import type { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { writeBertEncoder } from '../../test/fixtures/text/text-model-folders.js';

/** Issue 24's probe load: a wide mean-pooled embedder, and `clients` clients posting batches of long texts. */
export const WIDE_WIDTH = 1024;
export const WIDE_CLIENTS = 8;
export const WIDE_BATCH = 32;
export const WIDE_TOKENS = 500;

/**
 * Writes the wide embedder (hidden WIDE_WIDTH, `layers` layers, mean pooling, 512 positions) under
 * `out`, and a file of 8 `/embed` bodies of WIDE_BATCH texts of about WIDE_TOKENS tokens each
 * (`texts` joined, measured with `tokenizer`). Returns the model folder and the bodies file.
 */
export async function writeWideEmbedder(out: string, layers: number, texts: readonly string[], tokenizer: TextTokenizer): Promise<{ dir: string; bodiesFile: string }> {
  const dir = join(out, `bert-${WIDE_WIDTH}x${layers}-mean`);
  writeBertEncoder(dir, { hidden: WIDE_WIDTH, intermediate: WIDE_WIDTH, layers, positions: 512, maxSeqLength: 512, pooling: 'mean', normalize: true });
  const config = join(dir, 'tokenizer_config.json');
  writeFileSync(config, JSON.stringify({ ...JSON.parse(readFileSync(config, 'utf8')), model_max_length: 512 }, null, 2));
  let longText = '';
  for (const text of texts) {
    longText += `${text} `;
    if ((await tokenizer.encode(longText)).ids.length >= WIDE_TOKENS) break;
  }
  const bodiesFile = join(out, 'wide-bodies.jsonl');
  writeFileSync(bodiesFile, Array.from({ length: 8 }, (_, k) => JSON.stringify({ inputs: Array.from({ length: WIDE_BATCH }, (_, i) => `${k} ${i} ${longText}`), truncate: true })).join('\n') + '\n');
  return { dir, bodiesFile };
}
