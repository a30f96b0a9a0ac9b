import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ContextServices } from '../../src/instance/context-services.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';

const fixtures = fileURLToPath(new URL('../fixtures/text/', import.meta.url));

function services(): ContextServices {
  return new ContextServices(
    { modelName: 'm', modelVersion: '1', instanceName: 'm_0', instanceIndex: 0, instanceCount: 1, deviceKind: 'cpu', deviceId: 0, modelDir: fixtures, config: {} },
    () => Promise.reject(new Error('not used')),
  );
}

describe('ctx.loadTokenizer', () => {
  it('loads a tokenizer.json from the model folder, the one text serving uses', async () => {
    const tokenizer = await services().context.loadTokenizer('wordpiece/tokenizer.json');
    expect(tokenizer).toBeInstanceOf(TextTokenizer);
    const reference = await TextTokenizer.fromFile(`${fixtures}wordpiece/tokenizer.json`);
    expect(Array.from((await tokenizer.encode('the quick brown fox')).ids)).toEqual(Array.from((await reference.encode('the quick brown fox')).ids));
    expect((await tokenizer.encode('fox')).ids[0]).toBe(2);
  });

  it('names the file it could not read', async () => {
    await expect(services().context.loadTokenizer('missing/tokenizer.json')).rejects.toMatchObject({ code: 'SF_ERR_TOKENIZER_INVALID', message: expect.stringContaining('missing/tokenizer.json') });
  });
});

describe('ctx.loadModel', () => {
  it('runs an ONNX file with ONNX Runtime on the CPU, and sends it to GE (npu_ge) when the device is an NPU', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'serve-fn-load-'));
    const opened = services();
    try {
      writeFileSync(join(dir, 'simple.onnx'), buildAddSubModel());
      const ctx = opened.context;
      const cpu = await ctx.loadModel(join(dir, 'simple.onnx'));
      expect(cpu.backend).toBe('onnxruntime');
      // No NPU and no GE-built addon here: the GE backend says why it cannot run.
      await expect(ctx.loadModel(join(dir, 'simple.onnx'), { device: 'npu:1' })).rejects.toMatchObject({
        code: 'SF_ERR_NPU_UNAVAILABLE', message: expect.stringMatching(/^Ascend NPU backend is not available: /),
      });
    } finally {
      await opened.dispose();
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
