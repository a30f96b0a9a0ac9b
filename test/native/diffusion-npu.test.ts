import { spawnSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ACL_LIBRARY_ENV } from '../../src/backends/npu/npu-library.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { denoiser, oraclePixel, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';
import { REAL_HARDWARE, setEnv, setUpGeTarget, type GeTarget } from './npu-ge-target.js';
import { encodeSimModel } from './sim/om-writer.js';

/**
 * A diffusion pipeline's stages on the simulated NPU (test/native/sim and sim-ge: AscendCL and GE
 * that run the graphs with ONNX Runtime on the CPU): the denoiser through npu_ge on its model.onnx
 * or npu_om on a model.om with dynamic-batch gears, the VAE decoder through GE, each placed by its
 * stage folder's config.pbtxt (KIND_NPU). The oracle denoiser's image is known exactly, so the
 * NPU pipelines must give it, byte for byte as the CPU pipeline does, for concurrent requests at
 * different step counts whose steps share calls. Simulation only: nothing here ran on an NPU, and
 * with SERVE_FN_NPU_REAL=1 it is skipped (it writes a simulated .om and reads the simulation's counters).
 */

/** The simulation and the GE addon against it are compiled by the tests with gcc and g++ (build-sim.ts, build-sim-ge.ts, build-ge-addon.ts). */
const TOOLCHAIN = ['gcc', 'g++'].every((tool) => spawnSync(tool, ['--version']).status === 0);
const GEARS = [1, 2, 4];

interface ImageAnswer {
  readonly status: number;
  readonly rgb: number[];
  readonly shape: number[];
}

describe.skipIf(!TOOLCHAIN || REAL_HARDWARE)('diffusion stages on the simulated NPU (KIND_NPU in a stage folder\'s config.pbtxt)', () => {
  let target: GeTarget;
  let restoreEnv: () => void;
  let scratch: string;
  let server: ServeFnServer;

  const npuGroup = (device: number) => `instance_group [ { count: 1, kind: KIND_NPU, gpus: [ ${device} ] } ]\n`;

  beforeAll(async () => {
    scratch = mkdtempSync(join(tmpdir(), 'serve-fn-diffusion-npu-'));
    target = await setUpGeTarget();
    restoreEnv = setEnv({ ACL_SIM_DEVICE_COUNT: '2' });
    const cpu = writeDiffusionFolder(join(scratch, 'on-cpu'), { denoiser: 'flow' });
    // Every stage through GE: the text encoder and the VAE decoder (its instance loads vae_decoder/model.onnx) on NPU 0, the denoiser on NPU 1.
    const ge = writeDiffusionFolder(join(scratch, 'on-ge'), { denoiser: 'flow' });
    writeFileSync(join(ge, 'text_encoder', 'config.pbtxt'), npuGroup(0));
    writeFileSync(join(ge, 'transformer', 'config.pbtxt'), npuGroup(1));
    writeFileSync(join(ge, 'vae_decoder', 'config.pbtxt'), npuGroup(0));
    // The denoiser as an .om compiled for gears 1, 2, 4 (fixed 4×4 latents: an .om has only a dynamic batch).
    const om = writeDiffusionFolder(join(scratch, 'on-om'), { denoiser: 'flow' });
    writeFileSync(join(om, 'transformer', 'model.om'), encodeSimModel({ op: 'onnx', onnx: denoiser('flow', 4), batchGears: GEARS }));
    writeFileSync(join(om, 'transformer', 'config.pbtxt'), npuGroup(0));
    server = new ServeFnServer({
      models: [], diffusionFolders: [cpu, ge, om], logger: false, collectProcessMetrics: false,
      // A burst of requests starts together; the later ones join mid-way.
      diffusion: { maxRunning: 8, admissionWaitUs: 20_000 },
    });
    await server.start();
  }, 600_000);

  afterAll(async () => {
    await server?.close();
    restoreEnv?.();
    target?.restore();
    if (scratch) rmSync(scratch, { recursive: true, force: true });
  });

  /** The pipeline as a KServe v2 model: the image as UINT8 [32, 32, 3]. */
  async function generate(model: string, prompt: string, steps: number, guidance: number, seed: number): Promise<ImageAnswer> {
    const res = await server.app.inject({
      method: 'POST', url: `/v2/models/${model}/infer`,
      payload: {
        inputs: [{ name: 'prompt', datatype: 'BYTES', shape: [1], data: [prompt] }, ...(guidance > 1 ? [{ name: 'negative_prompt', datatype: 'BYTES', shape: [1], data: ['fox'] }] : [])],
        parameters: { num_inference_steps: steps, guidance_scale: guidance, seed },
      },
    });
    const output = res.statusCode === 200 ? res.json<{ outputs: { data: number[]; shape: number[] }[] }>().outputs[0] : { data: [], shape: [] };
    return { status: res.statusCode, rgb: output.data, shape: output.shape };
  }

  const REQUESTS = [['a red fox', 3], ['blue sky', 7], ['green hills at dawn', 12], ['sky', 5], ['a red fox', 9]] as const;

  /** The requests at once, the last two a little later (they join the running set mid-way). */
  async function burst(model: string, guidance: number): Promise<ImageAnswer[]> {
    const first = REQUESTS.slice(0, 3).map(([prompt, steps], i) => generate(model, prompt, steps, guidance, i));
    await new Promise((resolve) => setTimeout(resolve, 30));
    const later = REQUESTS.slice(3).map(([prompt, steps], i) => generate(model, prompt, steps, guidance, 10 + i));
    return Promise.all([...first, ...later]);
  }

  /** The step-batch histogram of a pipeline: calls, and calls of at most `rows` rows. */
  async function stepBatches(model: string, rows: number): Promise<{ calls: number; upTo: number }> {
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    const read = (pattern: string) => Number(new RegExp(`${pattern} (\\d+)`).exec(text)?.[1]);
    return {
      calls: read(`serve_fn_diffusion_step_batch_size_count\\{model="${model}"\\}`),
      upTo: read(`serve_fn_diffusion_step_batch_size_bucket\\{le="${rows}",model="${model}"\\}`),
    };
  }

  /** Every pixel of each image is the oracle's, and each image is the CPU pipeline's, byte for byte. */
  async function expectOracleImages(answers: readonly ImageAnswer[], onCpu: readonly ImageAnswer[], guidance: number): Promise<void> {
    for (const [i, answer] of answers.entries()) {
      expect(answer.status).toBe(200);
      expect(answer.shape).toEqual([32, 32, 3]);
      const pixel = await oraclePixel(REQUESTS[i][0], guidance, 'fox');
      expect(new Set(answer.rgb.map((v, k) => (v === pixel[k % 3] ? 'oracle' : `${k}:${v}`)))).toEqual(new Set(['oracle']));
      expect(answer.rgb).toEqual(onCpu[i].rgb);
    }
  }

  it('runs the text encoder and denoiser through npu_ge and the VAE decoder\'s ONNX through GE, on the NPUs their config.pbtxt name', async () => {
    const config = async (stage: string) => (await server.app.inject({ method: 'GET', url: `/v2/models/${stage}/config` })).json();
    expect(await config('on-ge_text_encoder')).toMatchObject({ backend: 'npu_ge', instance_group: [{ kind: 'KIND_NPU', gpus: [0] }] });
    expect(await config('on-ge_denoiser')).toMatchObject({ backend: 'npu_ge', instance_group: [{ kind: 'KIND_NPU', gpus: [1] }] });
    expect(await config('on-ge_vae_decoder')).toMatchObject({ backend: 'serve-fn', instance_group: [{ kind: 'KIND_NPU', gpus: [0] }] });
    expect(await config('on-om_text_encoder')).toMatchObject({ platform: 'onnxruntime_onnx' });
    expect(await config('on-om_denoiser')).toMatchObject({ backend: 'npu_om', max_batch_size: 4 });
  });

  it('npu_ge: concurrent requests at different step counts share denoiser calls and give the oracle\'s image, as on the CPU', async () => {
    const executes = target.ge('executes');
    const [onNpu, onCpu] = [await burst('on-ge', 1), await burst('on-cpu', 1)];
    await expectOracleImages(onNpu, onCpu, 1);
    const { calls, upTo } = await stepBatches('on-ge', 1);
    // 36 steps in fewer calls: some calls carried several requests' steps.
    expect(calls).toBeLessThan(36);
    expect(upTo).toBeLessThan(calls);
    // Every execution of the three stages ran on the simulated NPU.
    const executions = async (stage: string) => (await server.app.inject({ method: 'GET', url: `/v2/models/on-ge_${stage}/stats` })).json().model_stats[0].execution_count as number;
    const stages = await Promise.all(['text_encoder', 'denoiser', 'vae_decoder'].map(executions));
    expect(stages[1]).toBe(calls);
    expect(target.ge('executes') - executes).toBe(stages[0] + stages[1] + stages[2]);
  });

  it('npu_om: guided requests (2 rows each) are admitted only up to the largest gear, 4 rows, and give the oracle\'s image, as on the CPU', async () => {
    const [onNpu, onCpu] = [await burst('on-om', 2), await burst('on-cpu', 2)];
    await expectOracleImages(onNpu, onCpu, 2);
    const { calls, upTo } = await stepBatches('on-om', 4);
    expect(upTo).toBe(calls);
    expect((await stepBatches('on-om', 2)).upTo).toBeLessThan(calls);
    expect(GEARS).toContain(target.acl('last_batch_size'));
  });

  describe('a stage on an NPU whose AscendCL library is missing', () => {
    let restoreLibrary: () => void;
    beforeAll(() => {
      restoreLibrary = setEnv({ [ACL_LIBRARY_ENV]: join(scratch, 'no-cann', 'libascendcl.so') });
    });
    afterAll(() => restoreLibrary?.());

    it.each([['an .om denoiser (opened to read its gears)', 'om'], ['a GE VAE decoder (when its instance loads)', 'ge']])('%s fails to start with SF_ERR_NPU_UNAVAILABLE, naming the stage', async (_, kind) => {
      const dir = writeDiffusionFolder(join(scratch, `missing-${kind}`), { denoiser: 'flow' });
      if (kind === 'om') writeFileSync(join(dir, 'transformer', 'model.om'), encodeSimModel({ op: 'onnx', onnx: denoiser('flow', 4), batchGears: GEARS }));
      writeFileSync(join(dir, kind === 'om' ? 'transformer' : 'vae_decoder', 'config.pbtxt'), npuGroup(0));
      const failing = new ServeFnServer({ models: [], diffusionFolders: [dir], logger: false, collectProcessMetrics: false });
      try {
        const stage = kind === 'om' ? `missing-om_denoiser (${join(dir, 'transformer')})` : `missing-ge_vae_decoder (${join(dir, 'vae_decoder')})`;
        await expect(failing.start()).rejects.toMatchObject({
          code: 'SF_ERR_NPU_UNAVAILABLE',
          message: expect.stringMatching(new RegExp(`^stage ${stage.replace(/[()]/g, '\\$&')}: Ascend NPU backend is not available: .*no-cann`)),
        });
      } finally {
        await failing.close();
      }
    }, 120_000);
  });
});
