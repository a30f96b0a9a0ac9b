import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { describe, expect, it } from 'vitest';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceLogits } from '../helpers/decoder-reference.js';

describe('tiny decoder fixture', () => {
  for (const family of ['qwen3', 'qwen2'] as const) {
    it(`${family}: the ONNX graph's prefill logits equal the float64 reference`, async () => {
      const folder = writeDecoderFolder(join(mkdtempSync(join(tmpdir(), 'dec-')), family), { family });
      const session = await ort.InferenceSession.create(join(folder.dir, 'onnx/model.onnx'));
      const tokens = [5, 17, 300, 42, 9, 250];
      const { kvHeads, headDim, layers, vocab } = folder.weights.shape;
      const feeds: Record<string, ort.Tensor> = {
        input_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, BigInt), [1, tokens.length]),
        attention_mask: new ort.Tensor('int64', BigInt64Array.from(tokens, () => 1n), [1, tokens.length]),
        position_ids: new ort.Tensor('int64', BigInt64Array.from(tokens, (_, i) => BigInt(i)), [1, tokens.length]),
      };
      for (let l = 0; l < layers; l++) for (const kv of ['key', 'value']) feeds[`past_key_values.${l}.${kv}`] = new ort.Tensor('float32', new Float32Array(0), [1, kvHeads, 0, headDim]);
      const out = await session.run(feeds);
      const logits = out.logits!.data as Float32Array;
      const expected = referenceLogits(folder.weights, tokens);
      for (let i = 0; i < tokens.length; i++) for (let t = 0; t < vocab; t++) expect(Math.abs(logits[i * vocab + t]! - expected[i]![t]!)).toBeLessThan(1e-4);
    });
  }
});
