import { existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { basename, dirname, join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../src/backends/backend.js';
import { buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { NpuBackend } from '../../src/backends/npu/npu-backend.js';
import { fp16BitsToNumber, numberToFp16Bits } from '../../src/tensor/half-float.js';
import { buildGeAddon } from '../native/build-ge-addon.js';
import { REAL_HARDWARE, TEST_DEVICES } from '../native/npu-test-env.js';
import { REPO_ROOT, startCli } from './cli-harness.js';

/**
 * `serve-fn convert` as a user runs it: the built CLI, the GE build of the addon, and CANN — the
 * simulated one (test/native/sim-ge) by default, a real toolkit with SERVE_FN_GE_REAL=1
 * (docs/npu.md, "Testing on an Atlas machine"). The .om it writes is loaded through the OM path
 * (NpuBackend) and its answers compared with ONNX Runtime on the CPU running the ONNX file.
 */

const GE_REAL = REAL_HARDWARE;
const SOC = process.env.SERVE_FN_GE_TEST_SOC ?? 'Ascend310P3';
const PLAIN_ADDON = join(REPO_ROOT, 'native', 'build', 'Release', 'serve_fn_npu.node');

interface CliCann {
  readonly home: string;
  readonly lib64: string;
  /** What SERVE_FN_ACL_LIBRARY names: the AscendCL the addon binds. */
  readonly aclLibrary: string;
  readonly deviceId: number;
  /** The CLI's environment: the GE addon and the CANN it runs against. */
  readonly env: Record<string, string>;
}

/**
 * The simulated CANN home and the GE addon built against it; with SERVE_FN_NPU_REAL=1 the real
 * toolkit of SERVE_FN_CANN_HOME (else ASCEND_HOME_PATH) and the addon `npm run build:native`
 * built against it (or SERVE_FN_NPU_ADDON).
 */
async function cliCann(): Promise<CliCann> {
  if (!GE_REAL) {
    const { addon, cann } = await buildGeAddon();
    return {
      home: cann.home,
      lib64: cann.lib64,
      aclLibrary: cann.aclLibrary,
      deviceId: 0,
      env: { SERVE_FN_NPU_ADDON: addon, SERVE_FN_CANN_HOME: cann.home, SERVE_FN_ACL_LIBRARY: cann.aclLibrary },
    };
  }
  const home = process.env.SERVE_FN_CANN_HOME || process.env.ASCEND_HOME_PATH;
  if (!home) throw new Error('SERVE_FN_NPU_REAL=1 needs SERVE_FN_CANN_HOME (or ASCEND_HOME_PATH from set_env.sh): the CANN toolkit to test against');
  const addon = process.env.SERVE_FN_NPU_ADDON || join(REPO_ROOT, 'native', 'build', 'Release', 'serve_fn_npu_ge.node');
  const aclLibrary = process.env.SERVE_FN_ACL_LIBRARY || join(home, 'lib64');
  return { home, lib64: join(home, 'lib64'), aclLibrary, deviceId: TEST_DEVICES[0]!, env: { SERVE_FN_NPU_ADDON: addon, SERVE_FN_ACL_LIBRARY: aclLibrary } };
}
const WEIGHTS = [0.5, -1.25, 2, 0.125, -3, 1.5];
const BIAS = [0.1, -0.2];
const GEARS = [1, 4, 8];

/** y = x · W + b on [batch, 3] → [batch, 2] (a symbolic batch or a fixed one), weights off float16's grid. */
function affineModel(batch: string | number): Uint8Array {
  return buildOnnxModel({
    inputs: [{ name: 'x', datatype: 'FP32', shape: [batch, 3] }],
    outputs: [{ name: 'y', datatype: 'FP32', shape: [batch, 2] }],
    initializers: [
      { name: 'w', datatype: 'FP32', shape: [3, 2], data: new Float32Array(WEIGHTS) },
      { name: 'b', datatype: 'FP32', shape: [2], data: new Float32Array(BIAS) },
    ],
    nodes: [
      { op: 'MatMul', inputs: ['x', 'w'], outputs: ['xw'] },
      { op: 'Add', inputs: ['xw', 'b'], outputs: ['y'] },
    ],
  });
}

function rows(n: number): Float32Array {
  return Float32Array.from({ length: n * 3 }, (_, i) => Math.sin(i + 1) * 7.3);
}

const toFp16 = (values: Float32Array) => Float32Array.from(values, (v) => fp16BitsToNumber(numberToFp16Bits(v)));

describe('serve-fn convert', () => {
  let cann: CliCann;
  let dir: string;
  let model: string;
  let staticModel: string;
  let reference: ort.InferenceSession;
  let env: Record<string, string>;

  /** ONNX Runtime on the CPU: the independent answer. */
  async function expected(x: Float32Array, n: number): Promise<Float32Array> {
    const out = await reference.run({ x: new ort.Tensor('float32', x, [n, 3]) });
    return out.y!.data as Float32Array;
  }

  async function convert(args: string[], extraEnv: Record<string, string> = {}) {
    const cli = await startCli(['convert', ...args], { ...env, ...extraEnv });
    const code = await cli.waitForExit(60_000);
    return { code, output: cli.output() };
  }

  async function loadOm(file: string): Promise<BackendSession> {
    return new NpuBackend({ libraryPath: cann.aclLibrary }).load(file, { device: { kind: 'npu', id: cann.deviceId } });
  }

  beforeAll(async () => {
    cann = await cliCann();
    env = cann.env;
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-convert-'));
    model = join(dir, 'affine.onnx');
    writeFileSync(model, affineModel('n'));
    staticModel = join(dir, 'affine4.onnx');
    writeFileSync(staticModel, affineModel(4));
    reference = await ort.InferenceSession.create(model);
    if (!existsSync(join(REPO_ROOT, 'dist', 'cli', 'convert-command.js'))) throw new Error('run `npm run build` first: the test starts the built CLI');
  }, 300_000);

  afterAll(async () => {
    await reference?.release();
    rmSync(dir, { recursive: true, force: true });
  });

  it('writes a dynamic-batch .om that the OM path serves with the ONNX model\'s answers', async () => {
    const out = join(dir, 'om', 'affine.om');
    mkdirSync(dirname(out), { recursive: true });
    const { code, output } = await convert([model, '--soc-version', SOC, '--input-shape', 'x:-1,3', '--dynamic-batch-size', GEARS.join(','), '-o', out]);
    expect(code, output).toBe(0);
    const written = /^wrote (.+\.om)$/m.exec(output)?.[1];
    expect(written, output).toBeDefined();
    expect(dirname(written!)).toBe(dirname(out));
    expect(basename(written!)).toMatch(/^affine(_.+)?\.om$/);
    const session = await loadOm(written!);
    try {
      expect(session.metadata().batchSizes).toEqual(GEARS);
      for (const n of [1, 3, 8]) {
        const x = rows(n);
        const result = await session.run({ x: { name: 'x', datatype: 'FP32', shape: [n, 3], data: x } });
        expect(result.y!.shape).toEqual([n, 2]);
        const want = await expected(x, n);
        // origin precision: float32 throughout, so only the order of float additions may differ.
        for (const [i, v] of (result.y!.data as Float32Array).entries()) expect(v, `row ${Math.floor(i / 2)}`).toBeCloseTo(want[i]!, 5);
      }
    } finally {
      await session.dispose();
    }
  });

  it('asks GE for fp16 with --precision-mode force_fp16, as ATC defaults to', async () => {
    // A static graph this time, written without the .om that GE adds.
    const { code, output } = await convert([staticModel, '--soc-version', SOC, '--precision-mode', 'force_fp16', '-o', join(dir, 'fp16')]);
    expect(code, output).toBe(0);
    const written = /^wrote (.+\.om)$/m.exec(output)![1]!;
    expect(basename(written)).toMatch(/^fp16(_.+)?\.om$/);
    const session = await loadOm(written);
    try {
      expect(session.metadata().batchSizes).toBeUndefined();
      expect(session.metadata().inputs[0]!.shape).toEqual([4, 3]);
      const x = rows(4);
      const result = await session.run({ x: { name: 'x', datatype: 'FP32', shape: [4, 3], data: x } });
      const exact = await expected(x, 4);
      const got = result.y!.data as Float32Array;
      if (GE_REAL) {
        // A real NPU's fp16 kernels round inside the graph too: a few float16 steps (2^-11 each) of the float32 answer.
        for (const [i, v] of got.entries()) expect(Math.abs(v - exact[i]!)).toBeLessThanOrEqual(1e-2 * Math.max(1, Math.abs(exact[i]!)));
        return;
      }
      // The simulation rounds every float32 input and output to float16, as GE's fp16 mode would.
      const want = toFp16(await expected(toFp16(x), 4));
      expect(Array.from(got)).toEqual(Array.from(want));
      expect(Array.from(want)).not.toEqual(Array.from(exact));
    } finally {
      await session.dispose();
    }
  });

  it('needs --soc-version and an existing model file, and refuses flags ATC would refuse', async () => {
    const noSoc = await convert([model, '-o', join(dir, 'x.om')]);
    expect(noSoc.code).toBe(1);
    expect(noSoc.output).toContain("error: required option '--soc-version <soc>' not specified");
    const missing = join(dir, 'missing.onnx');
    const noFile = await convert([missing, '--soc-version', SOC, '-o', join(dir, 'x.om')]);
    expect(noFile.code).toBe(1);
    expect(noFile.output).toContain(`no ONNX model file at ${missing}`);
    const noGearDim = await convert([model, '--soc-version', SOC, '--dynamic-batch-size', '1,4', '-o', join(dir, 'x.om')]);
    expect(noGearDim.code).toBe(1);
    expect(noGearDim.output).toContain('--dynamic-batch-size needs --input-shape with -1');
    expect(existsSync(join(dir, 'x.om'))).toBe(false);
  });

  it.skipIf(GE_REAL)('reports a failed GE call with its function, status and GE\'s message', async () => {
    const { code, output } = await convert([model, '--soc-version', SOC, '-o', join(dir, 'failed.om')], { GE_SIM_FAIL: 'aclgrphBuildModel:1343225860' });
    expect(code).toBe(1);
    expect(output).toContain('serve-fn: aclgrphBuildModel failed with GE status 1343225860: [sim ge 1343225860] aclgrphBuildModel: injected failure');
    expect(existsSync(join(dir, 'failed.om'))).toBe(false);
  });

  it('says how to build the GE addon when the addon has no GE', async () => {
    const { code, output } = await convert([model, '--soc-version', SOC, '-o', join(dir, 'x.om')], { SERVE_FN_NPU_ADDON: PLAIN_ADDON });
    expect(code).toBe(1);
    expect(output).toMatch(/^serve-fn: Ascend NPU backend is not available: the native addon was built without CANN.*SERVE_FN_CANN_HOME.*npm run build:native/m);
  });

  it('doctor reports GE: the CANN home the addon was built against, its headers, and the GE libraries in use', async () => {
    const cli = await startCli(['doctor', '--json'], env);
    expect(await cli.waitForExit()).toBe(0);
    const { ge } = JSON.parse(cli.output()) as { ge: { available: boolean; cannHome: string; headers: string; libraries: string[] } };
    expect(ge).toMatchObject({ available: true, cannHome: cann.home, headers: 'CANN 8.5.0' });
    expect(ge.libraries.map((file) => basename(file)).sort()).toEqual(['libfmk_onnx_parser.so', 'libge_compiler.so', 'libge_runner.so', 'libgraph.so']);
    if (!GE_REAL) for (const file of ge.libraries) expect(dirname(file)).toBe(cann.lib64);
  });

  it('doctor says why GE is not available in an addon built without CANN', async () => {
    const cli = await startCli(['doctor'], { ...env, SERVE_FN_NPU_ADDON: PLAIN_ADDON });
    expect(await cli.waitForExit()).toBe(0);
    expect(cli.output()).toMatch(/^Ascend GE: not available \(the native addon was built without CANN.*SERVE_FN_CANN_HOME/m);
  });
});
