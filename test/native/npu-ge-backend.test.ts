import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../src/backends/backend.js';
import { GeBackend } from '../../src/backends/npu/ge-backend.js';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/spec/tensor.js';
import { REAL_HARDWARE, setUpGeTarget, type GeTarget } from './npu-ge-target.js';
import { LEAK_COUNTERS } from './npu-test-env.js';
import { serveFnFailure } from '../helpers/thrown.js';

/**
 * serve-fn's GE backend on the real addon and the simulated GE libraries, which are stricter than
 * a fake: an execution whose shape is not a compiled gear, or on a busy stream, is refused there.
 * Results are compared with onnxruntime-node on the CPU. Simulated only so far; with
 * SERVE_FN_NPU_REAL=1 the same tests take a real CANN (npu-ge-target.ts), without the
 * simulation's counters and injected failures.
 */

const ADD_SUB = buildAddSubModel({ size: 16 });

function batch(rows: number): Record<string, Tensor> {
  const a = Int32Array.from({ length: rows * 16 }, (_, i) => 100 * Math.floor(i / 16) + (i % 16));
  const b = Int32Array.from({ length: rows * 16 }, (_, i) => 7 * Math.floor(i / 16) - 3 * (i % 16));
  return { INPUT0: createTensor('INPUT0', 'INT32', [rows, 16], a), INPUT1: createTensor('INPUT1', 'INT32', [rows, 16], b) };
}

describe(`GeBackend on ${REAL_HARDWARE ? 'a real CANN' : 'the simulated GE libraries'}`, () => {
  let target: GeTarget;
  let reference: BackendSession;
  let backend: GeBackend;
  const ge = (name: string) => target.ge(name);

  /** The simulation's GE counters now; undefined on real CANN, which has none. */
  const snapshot = (...names: string[]) => (REAL_HARDWARE ? undefined : Object.fromEntries(names.map((name) => [name, ge(name)])));
  /** How much the counters of `before` grew since; checked in the simulation only. */
  const expectGrowth = (before: Record<string, number> | undefined, growth: Record<string, number>) => {
    if (before) expect(Object.fromEntries(Object.keys(growth).map((name) => [name, ge(name) - before[name]]))).toEqual(growth);
  };

  beforeAll(async () => {
    target = await setUpGeTarget();
    backend = new GeBackend({ libraryPath: target.aclLibrary });
    reference = await new OnnxBackend().load(ADD_SUB);
  }, 600_000);

  afterAll(async () => {
    await reference?.dispose();
    target?.restore();
  });

  it('is available with the GE addon and AscendCL', async () => {
    expect(await backend.available()).toBe(true);
  });

  it('spreads 7 rows over 3 slots (3 + 2 + 2), loads each slot once, matches ONNX Runtime and leaves nothing behind', async () => {
    const loads = snapshot('load_graph_calls');
    const session = await backend.load(ADD_SUB, { device: { kind: 'npu', id: REAL_HARDWARE ? 0 : 1 }, options: { slots: 3 } });
    expectGrowth(loads, { load_graph_calls: 3 });
    const executes = snapshot('executes');
    expect(await session.run(batch(7))).toEqual(await reference.run(batch(7)));
    expectGrowth(executes, { executes: 3 });
    await session.dispose();
    if (!REAL_HARDWARE) {
      expect(ge('sessions')).toBe(0);
      expect(LEAK_COUNTERS.map((name) => [name, target.acl(name)])).toEqual(LEAK_COUNTERS.map((name) => [name, 0]));
    }
  });

  it('pads to the compiled gears, which the simulation insists on, and trims the rows back', async () => {
    const session = await backend.load(ADD_SUB, {
      device: { kind: 'npu', id: 0 },
      options: { slots: 2, 'graph.ge.inputShape': 'INPUT0:-1,16;INPUT1:-1,16', 'graph.ge.dynamicDims': '2,2;4,4' },
    });
    try {
      const executes = snapshot('executes');
      // 11 rows, at most 4 per execution: slot 0 runs 3 + 3, slot 1 runs 3 + 2, each padded to 4 or 2.
      expect(await session.run(batch(11))).toEqual(await reference.run(batch(11)));
      expectGrowth(executes, { executes: 4 });
      expect(await session.run(batch(1))).toEqual(await reference.run(batch(1)));
    } finally {
      await session.dispose();
    }
  });

  it('loads two models at once whose streams bind different cores (ge.aicoreNum goes to their sessions, not GEInitialize)', async () => {
    const first = await backend.load(ADD_SUB, { options: { slots: 2, 'ge.aicoreNum': '2|2' } });
    try {
      const second = await backend.load(ADD_SUB, { options: { 'ge.aicoreNum': '1|1' } });
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
    const cycles = snapshot('ge_initialize_calls', 'ge_finalize_calls');
    // Two precision modes that both keep int32 and fp32 as they are, so either computes the same.
    const first = await backend.load(ADD_SUB, { options: { 'ge.exec.precision_mode': 'force_fp32' } });
    let refused;
    try {
      refused = await serveFnFailure(backend.load(ADD_SUB, { options: { 'ge.exec.precision_mode': 'must_keep_origin_dtype' } }));
    } finally {
      await first.dispose();
    }
    expect(refused.message).toContain('GE global option ge.exec.precision_mode is "must_keep_origin_dtype" but GE was initialised in this process with "force_fp32"');
    const second = await backend.load(ADD_SUB, { options: { 'ge.exec.precision_mode': 'must_keep_origin_dtype' } });
    try {
      expect(await second.run(batch(2))).toEqual(await reference.run(batch(2)));
    } finally {
      await second.dispose();
    }
    expectGrowth(cycles, { ge_initialize_calls: 2, ge_finalize_calls: 2 });
  });

  // Failures are injected with GE_SIM_FAIL, which only the simulation reads.
  it.skipIf(REAL_HARDWARE).each(['aclgrphParseONNXFromMem', 'CompileGraph', 'LoadGraph'])('names a failing %s with its GE status and message', async (fn) => {
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

  it.skipIf(REAL_HARDWARE)('names a failing execute, and the session keeps working afterwards', async () => {
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
