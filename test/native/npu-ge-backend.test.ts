import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../src/backends/backend.js';
import { GeBackend } from '../../src/backends/npu/ge-backend.js';
import { loadNpuBinding } from '../../src/backends/npu/native-binding.js';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/tensor/tensor.js';
import { buildGeAddon } from './build-ge-addon.js';
import type { SimCann } from './build-sim-ge.js';
import { buildSimulatedAcl, onnxRuntimeLibrary } from './build-sim.js';
import { LEAK_COUNTERS } from './npu-test-env.js';
import { serveFnFailure } from '../helpers/thrown.js';

/**
 * serve-fn's GE backend on the real addon and the simulated GE libraries, which are stricter than
 * a fake: an execution whose shape is not a compiled gear, or on a busy stream, is refused there.
 * Results are compared with onnxruntime-node on the CPU. Simulated only; no Ascend hardware.
 */

interface SimCounters {
  counter(libraryFile: string, name: string): number;
}

const ENV_KEYS = ['SERVE_FN_NPU_ADDON', 'SIM_ORT_LIBRARY', 'GE_SIM_FAIL'] as const;
const ADD_SUB = buildAddSubModel({ size: 16 });

function batch(rows: number): Record<string, Tensor> {
  const a = Int32Array.from({ length: rows * 16 }, (_, i) => 100 * Math.floor(i / 16) + (i % 16));
  const b = Int32Array.from({ length: rows * 16 }, (_, i) => 7 * Math.floor(i / 16) - 3 * (i % 16));
  return { INPUT0: createTensor('INPUT0', 'INT32', [rows, 16], a), INPUT1: createTensor('INPUT1', 'INT32', [rows, 16], b) };
}

describe('GeBackend on the simulated GE libraries', () => {
  let cann: SimCann;
  let counters: SimCounters;
  let reference: BackendSession;
  let backend: GeBackend;
  const saved = new Map<string, string | undefined>();
  const ge = (name: string) => counters.counter(cann.geRunnerLibrary, name);
  const acl = (name: string) => counters.counter(cann.aclLibrary, name);

  beforeAll(async () => {
    const build = await buildGeAddon();
    cann = build.cann;
    for (const key of ENV_KEYS) saved.set(key, process.env[key]);
    process.env.SERVE_FN_NPU_ADDON = build.addon;
    process.env.SIM_ORT_LIBRARY = onnxRuntimeLibrary();
    const loaded = loadNpuBinding();
    if ('reason' in loaded) throw new Error(loaded.reason);
    counters = createRequire(import.meta.url)(buildSimulatedAcl().countersAddon) as SimCounters;
    backend = new GeBackend({ libraryPath: cann.aclLibrary });
    reference = await new OnnxBackend().load(ADD_SUB);
  }, 600_000);

  afterAll(async () => {
    await reference?.dispose();
    for (const [key, value] of saved) {
      if (value === undefined) delete process.env[key];
      else process.env[key] = value;
    }
  });

  it('is available with the GE addon and the simulated AscendCL', async () => {
    expect(await backend.available()).toBe(true);
  });

  it('spreads 7 rows over 3 slots (3 + 2 + 2), loads each slot once, matches ONNX Runtime and leaves nothing behind', async () => {
    const loads = ge('load_graph_calls');
    const session = await backend.load(ADD_SUB, { device: { kind: 'npu', id: 1 }, options: { slots: 3 } });
    expect(ge('load_graph_calls') - loads).toBe(3);
    const executes = ge('executes');
    expect(await session.run(batch(7))).toEqual(await reference.run(batch(7)));
    expect(ge('executes') - executes).toBe(3);
    await session.dispose();
    expect(ge('sessions')).toBe(0);
    expect(LEAK_COUNTERS.map((name) => [name, acl(name)])).toEqual(LEAK_COUNTERS.map((name) => [name, 0]));
  });

  it('pads to the compiled gears, which the simulation insists on, and trims the rows back', async () => {
    const session = await backend.load(ADD_SUB, {
      device: { kind: 'npu', id: 0 },
      options: { slots: 2, 'graph.ge.inputShape': 'INPUT0:-1,16;INPUT1:-1,16', 'graph.ge.dynamicDims': '2,2;4,4' },
    });
    try {
      const executes = ge('executes');
      // 11 rows, at most 4 per execution: slot 0 runs 3 + 3, slot 1 runs 3 + 2, each padded to 4 or 2.
      expect(await session.run(batch(11))).toEqual(await reference.run(batch(11)));
      expect(ge('executes') - executes).toBe(4);
      expect(await session.run(batch(1))).toEqual(await reference.run(batch(1)));
    } finally {
      await session.dispose();
    }
  });

  it('loads two models at once whose streams bind different cores (ge.aicoreNum goes to their sessions, not GEInitialize)', async () => {
    const first = await backend.load(ADD_SUB, { options: { slots: 2, 'ge.aicoreNum': '12|10' } });
    try {
      const second = await backend.load(ADD_SUB, { options: { 'ge.aicoreNum': '4|8' } });
      try {
        expect(await second.run(batch(3))).toEqual(await reference.run(batch(3)));
        expect(await first.run(batch(3))).toEqual(await reference.run(batch(3)));
      } finally {
        await second.dispose();
      }
    } finally {
      await first.dispose();
    }
  });

  it('refuses other global options while a model holds GE, and initializes GE again with them once the last one unloaded', async () => {
    const [inits, finals] = [ge('ge_initialize_calls'), ge('ge_finalize_calls')];
    const first = await backend.load(ADD_SUB, { options: { 'ge.exec.deviceId': '0' } });
    let refused;
    try {
      refused = await serveFnFailure(backend.load(ADD_SUB, { options: { 'ge.exec.deviceId': '1' } }));
    } finally {
      await first.dispose();
    }
    expect(refused.message).toContain('GE global option ge.exec.deviceId is "1" but GE was initialised in this process with "0"');
    const second = await backend.load(ADD_SUB, { options: { 'ge.exec.deviceId': '1' } });
    try {
      expect(await second.run(batch(2))).toEqual(await reference.run(batch(2)));
    } finally {
      await second.dispose();
    }
    expect([ge('ge_initialize_calls') - inits, ge('ge_finalize_calls') - finals]).toEqual([2, 2]);
  });

  it.each(['aclgrphParseONNXFromMem', 'CompileGraph', 'LoadGraph'])('names a failing %s with its GE status and message', async (fn) => {
    process.env.GE_SIM_FAIL = `${fn}:4242`;
    try {
      const error = await serveFnFailure(backend.load(ADD_SUB, { options: { slots: 2 } }));
      expect(error.code).toBe('SF_ERR_NPU_GE');
      expect(error.message).toBe(`${fn} failed with GE status 4242: [sim ge 4242] ${fn}: injected failure`);
    } finally {
      delete process.env.GE_SIM_FAIL;
    }
    expect(ge('sessions')).toBe(0);
  });

  it('names a failing execute, and the session keeps working afterwards', async () => {
    const session = await backend.load(ADD_SUB, { options: { slots: 2 } });
    try {
      process.env.GE_SIM_FAIL = 'ExecuteGraphWithStreamAsync';
      const error = await serveFnFailure(session.run(batch(2)));
      delete process.env.GE_SIM_FAIL;
      expect(error.code).toBe('SF_ERR_NPU_GE');
      expect(error.message).toBe('ExecuteGraphWithStreamAsync failed with GE status 1343225857: [sim ge 1343225857] ExecuteGraphWithStreamAsync: injected failure');
      expect(await session.run(batch(2))).toEqual(await reference.run(batch(2)));
    } finally {
      delete process.env.GE_SIM_FAIL;
      await session.dispose();
    }
  });
});
