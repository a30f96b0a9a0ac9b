import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { modelsToServe } from '../../src/cli/entry-discovery.js';
import { isGenerativeFolder, readGenerativeFolder } from '../../src/generation/generative-folder.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { writeBertEncoder } from '../fixtures/text/text-model-folders.js';

const root = mkdtempSync(join(tmpdir(), 'serve-fn-generative-folder-'));
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('generative folders', () => {
  const decoder = writeDecoderFolder(join(root, 'models', 'qwen3-tiny'));
  writeBertEncoder(join(root, 'models', 'bge-tiny'), { pooling: 'cls', normalize: true });

  it('is told from a text folder although it also has config.json, tokenizer.json and model.onnx', async () => {
    expect(isGenerativeFolder(decoder.dir)).toBe(true);
    expect(isGenerativeFolder(join(root, 'models', 'bge-tiny'))).toBe(false);
    expect(await modelsToServe(decoder.dir)).toMatchObject({ models: [], textFolders: [], generativeFolders: [decoder.dir] });
    // A parent folder of both kinds serves each as its kind.
    expect(await modelsToServe(join(root, 'models'))).toMatchObject({ textFolders: [join(root, 'models', 'bge-tiny')], generativeFolders: [decoder.dir] });
    expect(await modelsToServe([decoder.dir, join(root, 'models', 'bge-tiny')])).toMatchObject({ textFolders: [join(root, 'models', 'bge-tiny')], generativeFolders: [decoder.dir] });
  });

  it("takes max_position_embeddings as the context, not the tokenizer's model_max_length, and every eos id", () => {
    const folder = readGenerativeFolder(decoder.dir);
    expect(folder).toMatchObject({ name: 'qwen3-tiny', architecture: 'Qwen3ForCausalLM', maxPositionEmbeddings: 256, eosTokenIds: decoder.eosTokenIds });
    const { layers, kvHeads, headDim } = decoder.weights.shape;
    expect(folder.kvBytesPerToken).toBe(layers * 2 * kvHeads * headDim * 4);
  });

  it('refuses a folder whose config.json names no causal LM, or that lacks a file, saying what', () => {
    const dir = join(root, 'other');
    writeDecoderFolder(dir);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ architectures: ['BertModel'] }));
    expect(isGenerativeFolder(dir)).toBe(false);
    expect(() => readGenerativeFolder(dir)).toThrow(/names no \*ForCausalLM architecture \(it names BertModel\)/);
    writeFileSync(join(dir, 'config.json'), JSON.stringify({ architectures: ['LlamaForCausalLM'], hidden_size: 8, num_attention_heads: 2, num_hidden_layers: 1, vocab_size: 10 }));
    rmSync(join(dir, 'tokenizer.json'));
    expect(() => readGenerativeFolder(dir)).toThrow(/not a decoder export: tokenizer\.json missing/);
  });
});
