import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildSimulatedAcl, type SimBuild } from './build-sim.js';
import { REAL_HARDWARE } from './npu-test-env.js';
import { encodeSimModel, writeSimModel } from './sim/om-writer.js';

// The simulation must refuse each misuse the addon avoids, or the addon tests prove nothing.
describe.skipIf(REAL_HARDWARE)('simulated AscendCL', () => {
  let sim: SimBuild;
  let dir: string;

  beforeAll(() => {
    sim = buildSimulatedAcl();
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-sim-'));
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('returns the real ACL error codes for misuse and frees everything', () => {
    const model = writeSimModel(join(dir, 'add.om'), {
      op: 'add',
      batchGears: [1, 4, 8],
      inputs: [{ name: 'a', datatype: 'FP32', dims: [-1, 4] }, { name: 'b', datatype: 'FP32', dims: [-1, 4] }],
      outputs: [{ name: 'sum', datatype: 'FP32', dims: [-1, 4] }],
    });
    const notAModel = join(dir, 'not-a-model.om');
    writeFileSync(notAModel, 'plain text');
    const lines = execFileSync(sim.misuseCheck, [model, notAModel], { encoding: 'utf8' }).trim().split('\n');
    expect(Object.fromEntries(lines.map((line) => line.split(' ')))).toEqual({
      'malloc-before-init': '100001',
      init: '0',
      'init-again': '100002',
      'malloc-without-context': '107002',
      'recent-error-names-the-cause': '1',
      'recent-error-cleared-after-read': '1',
      'set-missing-device': '107001',
      'set-device': '0',
      'create-context': '0',
      'create-stream': '0',
      'load-missing-file': '145002',
      'load-not-a-model': '100013',
      load: '0',
      'execute-without-gear': '145013',
      'set-gear-3': '145013',
      'set-gear-on-wrong-index': '100000',
      'set-gear-4': '0',
      'execute-wrong-model-id': '100011',
      execute: '0',
      'sum-row-3-col-3-times-2': '31',
      'last-batch-size': '4',
      'execute-without-context': '107002',
      'execute-from-other-context': '107004',
      'execute-on-stream-of-other-context': '107003',
      'destroy-context-with-open-stream': '100000',
      'unload-from-other-context': '107004',
      'set-gear-on-small-dataset': '0',
      'input-buffer-too-small': '100000',
      'host-memory-as-input': '100000',
      'copy-beyond-allocation': '100000',
      'first-stream-execute': '0',
      'second-stream-execute': '200001',
      'max-concurrent-executes': '2',
      unload: '0',
      'unload-again': '100011',
      'outstanding-after-cleanup': '0',
      finalize: '0',
      'finalize-again': '100037',
    });
    expect(lines).toHaveLength(38);
  });

  it('writes the documented model layout', () => {
    const bytes = encodeSimModel({
      op: 'matmul',
      batchGears: [2],
      inputs: [{ name: 'x', datatype: 'FP32', dims: [-1, 1] }],
      outputs: [{ name: 'y', datatype: 'INT32', dims: [-1, 1] }],
      weights: [0.5],
    });
    const view = new DataView(bytes.buffer);
    expect(new TextDecoder().decode(bytes.subarray(0, 8))).toBe('SFSIMOM1');
    expect([0, 1, 2, 3, 4, 5].map((i) => view.getUint32(8 + 4 * i, true))).toEqual([1, 4, 1, 1, 1, 1]);
    expect(view.getBigUint64(32, true)).toBe(2n);
    expect(new TextDecoder().decode(bytes.subarray(40, 41))).toBe('x');
    expect(bytes[41]).toBe(0);
    expect([view.getInt32(104, true), view.getUint32(108, true), view.getBigInt64(112, true), view.getBigInt64(120, true)])
      .toEqual([0, 2, -1n, 1n]);
    expect(view.getInt32(128 + 64, true)).toBe(3);
    expect(view.getFloat32(bytes.length - 4, true)).toBe(0.5);
    expect(bytes.length).toBe(32 + 8 + 2 * (64 + 8 + 16) + 4);
  });

  it('rejects tensor names that do not fit the 64-byte field', () => {
    expect(() =>
      encodeSimModel({ op: 'relu', inputs: [{ name: 'n'.repeat(64), datatype: 'FP32', dims: [1] }], outputs: [] }),
    ).toThrow(`tensor name '${'n'.repeat(64)}' must be shorter than 64 bytes`);
  });
});
