import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { sdxlReference, writeSdxlFolder } from '../helpers/sdxl-fixture.js';
import { missingPython } from '../helpers/speech-python.js';
import { startCli } from './cli-harness.js';

/** `serve-fn start <SDXL-style folder>`: two text encoders served with no code. */
const root = scratchFolder('cli-sdxl');
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe('serve-fn start <SDXL-style pipeline folder>', () => {
  it.skipIf(missingPython(['onnx', 'numpy']))('serves the folder on /v2 with its second text encoder; the image is numpy\'s reference (default guidance, zeros as the unconditional branch)', async () => {
    const folder = writeSdxlFolder(join(root, 'tiny-xl'));
    const [reference] = await sdxlReference(folder, [{ prompt: 'green hills at dawn', width: 32, height: 16, guidance: 5 }]);
    const cli = await startCli(['start', folder, '--host', '127.0.0.1']);
    try {
      await cli.waitForOutput(/serve-fn ready/, 60_000);
      const stage = await fetch(`${cli.base}/v2/models/tiny-xl_text_encoder_2/ready`);
      expect(stage.status).toBe(200);
      const v2 = await fetch(`${cli.base}/v2/models/tiny-xl/infer`, {
        method: 'POST', headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [{ name: 'prompt', datatype: 'BYTES', shape: [1], data: ['green hills at dawn'] }], parameters: { num_inference_steps: 5, width: 32, height: 16 } }),
      });
      const [image] = ((await v2.json()) as { outputs: { data: number[]; shape: number[] }[] }).outputs;
      expect(image.shape).toEqual([16, 32, 3]);
      expect(new Set(image.data.map((v, i) => (v === reference.pixel[i % 3] ? 'ok' : `${i}:${v}`)))).toEqual(new Set(['ok']));
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  }, 90_000);
});
