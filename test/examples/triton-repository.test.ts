import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import type { FolderModelRepository } from '../../src/model-repository/folder-model-repository.js';
import { int32, range, values } from '../fixtures/repository/repository-files.js';

const root = fileURLToPath(new URL('../../examples/triton-repository/models', import.meta.url));

describe('examples/triton-repository', () => {
  let server: ServeFnServer;
  let repository: FolderModelRepository;

  beforeAll(async () => {
    server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
    await server.start();
    repository = server.repository!;
  });

  afterAll(() => server?.close());

  it('serves the config-only ONNX model, the model.ts model and their ensemble', async () => {
    expect(repository.models().map((m) => `${m.info.name} ${m.info.platform} ${m.ready()}`)).toEqual([
      'add_sub onnxruntime_onnx true',
      'add_sub_scaled ensemble true',
      'scale serve-fn true',
    ]);
    const response = await repository.get('add_sub_scaled').infer({
      inputs: [int32('A', [1, 16], range(16)), int32('B', [1, 16], range(16, (i) => 100 - i))],
    });
    expect(Object.fromEntries(response.outputs.map((t) => [t.name, values(t)]))).toEqual({
      HALF_SUM: range(16, () => 50),
      HALF_SUM_TOTAL: [800],
      DIFFERENCE: range(16, (i) => 2 * i - 100),
    });
  });

  it('answers a request the model.ts model refuses with its own 400', async () => {
    await expect(repository.get('scale').infer({ inputs: [int32('VALUES', [1, 2], [1, -1])] })).rejects.toThrow(
      expect.objectContaining({ statusCode: 400, message: 'scale: VALUES must not be negative' }),
    );
  });
});
