import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  CALLER_OUTPUTS, NOTHING_HELD, denseModel, halfReference, input, reached, reference, rejection, setUpGeTests, tensor, withEnv, type GeTestEnv,
} from './ge-test-env.js';
import { REAL_HARDWARE } from './npu-test-env.js';

/**
 * convertGeModel (native/src/ge-convert-worker.cc) against the simulated CANN home: the IR build
 * API writes an .om that the addon's OM path loads and runs, and each build call's failure
 * surfaces with its GE status. Simulation only: nothing here has run on Ascend hardware.
 */

describe.skipIf(REAL_HARDWARE)('ONNX to OM through the GE IR build API (simulated CANN)', () => {
  let env: GeTestEnv;

  beforeAll(async () => {
    env = await setUpGeTests();
  }, 600_000);
  afterAll(() => env.cleanup());

  const convert = (output: string) =>
    env.ge.convertGeModel({
      bytes: denseModel(),
      output: join(env.scratchDir, output),
      parserOptions: {},
      buildOptions: { 'ge.socVersion': 'Ascend310P3', input_shape: 'x:4,3' },
    });

  it.each([['dense.om', 'dense.om'], ['plain', 'plain.om']])(
    'converts to an .om (output %s writes %s) that the OM path loads and runs, at GE\'s default fp16',
    async (output, written) => {
      const builds = env.geCount('build_calls');
      const { file } = await env.ge.convertGeModel({
        bytes: denseModel(),
        output: join(env.scratchDir, output),
        parserOptions: {},
        buildOptions: { 'ge.socVersion': 'Ascend310P3', input_shape: 'x:4,3' },
      });
      expect(file).toBe(join(env.scratchDir, written));
      expect(existsSync(`${file}.om`)).toBe(false);
      expect(env.geCount('build_calls') - builds).toBe(1);
      const om = await env.ge.loadModel({ libraryPath: env.build.cann.lib64, deviceId: 0, file });
      const x = input(5);
      const [y, z] = await om.execute([x], 4);
      const expected = await halfReference(x);
      expect(Array.from(new Float32Array(y!))).toEqual(expected.y);
      expect(Array.from(new Float32Array(z!))).toEqual(expected.z);
      // fp16 shows: the float32 answer differs.
      expect(Array.from(new Float32Array(z!))).not.toEqual((await reference(x)).z);
      await om.unload();
      expect(env.resources()).toEqual(NOTHING_HELD);
    },
  );

  it('converts without AscendCL or a device, as ATC does', async () => {
    const before = { init: env.aclCount('acl_init_calls'), contexts: env.aclCount('contexts') };
    await convert('no-device.om');
    expect(env.aclCount('acl_init_calls')).toBe(before.init);
    expect(env.aclCount('contexts')).toBe(before.contexts);
  });

  it('refuses to convert while a GE model is loaded (aclgrphBuildFinalize would finalise GE under it), and converts after its unload', async () => {
    const model = await env.ge.loadGeModel(env.options());
    const builds = env.geCount('build_calls');
    const refused = await rejection(convert('while-loaded.om'));
    expect(refused?.message).toBe(
      'cannot convert while 1 GE model(s) are loaded in this process: aclgrphBuildFinalize would finalise GE under their ' +
        'sessions; unload them first, or convert in another process (serve-fn convert)',
    );
    expect(env.geCount('build_calls')).toBe(builds);
    const [y] = await model.execute(0, [tensor(input(2))], CALLER_OUTPUTS);
    expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(2))).y);
    await model.unload();
    expect((await convert('after-unload.om')).file).toBe(join(env.scratchDir, 'after-unload.om'));
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it('makes a load that comes during a conversion wait for its end (the simulation refuses GEInitialize inside a build environment)', async () => {
    const builds = env.geCount('build_calls');
    await withEnv({ GE_SIM_BUILD_DELAY_MS: '300' }, async () => {
      const converted = convert('during-load.om');
      await reached(env.geCount, 'build_calls', builds);
      expect(env.geCount('build_environments')).toBe(1);
      const [model, { file }] = await Promise.all([env.ge.loadGeModel(env.options()), converted]);
      expect(file).toBe(join(env.scratchDir, 'during-load.om'));
      expect(env.geCount('build_environments')).toBe(0);
      const [y] = await model.execute(0, [tensor(input(3))], CALLER_OUTPUTS);
      expect(Array.from(new Float32Array(y!.data))).toEqual((await reference(input(3))).y);
      await model.unload();
    });
    expect(env.resources()).toEqual(NOTHING_HELD);
  });

  it.each(['aclgrphBuildInitialize', 'aclgrphBuildModel', 'aclgrphSaveModel'])(
    'surfaces a failing %s on convert',
    async (fn) => {
      const output = join(env.scratchDir, `failed-${fn}.om`);
      const error = await withEnv({ GE_SIM_FAIL: fn }, () =>
        rejection(env.ge.convertGeModel({ bytes: denseModel(), output, parserOptions: {}, buildOptions: { 'ge.socVersion': 'Ascend310P3' } })),
      );
      expect(error).toMatchObject({ geFunction: fn, geStatus: 1343225857 });
      expect(existsSync(output)).toBe(false);
      expect(env.resources()).toEqual(NOTHING_HELD);
    },
  );
});
