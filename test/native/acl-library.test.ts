import { execFileSync } from 'node:child_process';
import { copyFileSync, mkdirSync, symlinkSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join, resolve } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { SimBuild } from './build-sim.js';
import { REAL_HARDWARE, f32, setUpNpuTests, type NpuTestEnv } from './npu-test-env.js';

const ADDON = resolve('native/build/Release/serve_fn_npu.node');
const NOT_FOUND = 'cannot open shared object file: No such file or directory';

// Library search runs in a child process: once a library is loaded, glibc resolves its bare name
// to the loaded copy, so only a fresh process shows the real search.
function probeInChild(env: Record<string, string>): unknown {
  const script = 'console.log(JSON.stringify(require(process.argv[1]).probeLibrary()))';
  const { ASCEND_HOME_PATH: _home, LD_LIBRARY_PATH: _path, SERVE_FN_ACL_LIBRARY: _lib, ...rest } = process.env;
  return JSON.parse(execFileSync(process.execPath, ['-e', script, ADDON], { env: { ...rest, ...env }, encoding: 'utf8' }));
}

describe.skipIf(REAL_HARDWARE)('finding AscendCL', () => {
  let env: NpuTestEnv;
  let sim: SimBuild;

  beforeAll(() => {
    env = setUpNpuTests();
    sim = env.sim!;
  });
  afterAll(() => env.cleanup());

  it('uses libascendcl.so from an explicit directory or file', () => {
    const expected = { found: true, path: sim.fullLibrary, variant: 'ascendcl', tried: [] };
    expect(env.binding.probeLibrary(sim.fullDir)).toEqual(expected);
    expect(env.binding.probeLibrary(sim.fullLibrary)).toEqual(expected);
  });

  it('falls back to the CANN 9 split pair libacl_rt.so + libacl_mdl.so', () => {
    const split = { found: true, path: `${sim.splitDir}/libacl_rt.so + ${sim.splitDir}/libacl_mdl.so`, variant: 'split' };
    expect(env.binding.probeLibrary(sim.splitDir)).toEqual({ ...split, tried: [`${sim.splitDir}/libascendcl.so: ${NOT_FOUND}`] });
    expect(env.binding.probeLibrary(sim.splitRuntimeLibrary)).toEqual({ ...split, tried: [] });
  });

  it('reports every path it tried when nothing usable is there', () => {
    const missing = join(env.scratchDir, 'missing');
    expect(env.binding.probeLibrary(missing)).toEqual({ found: false, tried: [`${missing}: ${NOT_FOUND}`] });
    const notElf = join(env.scratchDir, 'text', 'libascendcl.so');
    mkdirSync(join(env.scratchDir, 'text'));
    writeFileSync(notElf, 'not a shared object');
    const probe = env.binding.probeLibrary(join(env.scratchDir, 'text'));
    expect(probe.found).toBe(false);
    expect(probe.tried).toHaveLength(2);
    expect(probe.tried[0]).toMatch(new RegExp(`^${notElf}: (invalid ELF header|file too short)$`));
    expect(probe.tried[1]).toBe(`${join(env.scratchDir, 'text')}/libacl_rt.so: ${NOT_FOUND}`);
  });

  it('skips a libascendcl.so that lacks a required function', () => {
    const dir = join(env.scratchDir, 'partial');
    mkdirSync(dir);
    copyFileSync(sim.splitRuntimeLibrary, join(dir, 'libascendcl.so'));
    expect(env.binding.probeLibrary(dir)).toEqual({
      found: false,
      tried: [`${dir}/libascendcl.so: missing symbol aclmdlCreateDesc`, `${dir}/libacl_rt.so: ${NOT_FOUND}`],
    });
  });

  it('searches ASCEND_HOME_PATH/lib64, then LD_LIBRARY_PATH, then the system path, libascendcl.so first', () => {
    const home = join(env.scratchDir, 'home');
    const empty = join(env.scratchDir, 'empty');
    mkdirSync(join(home, 'lib64'), { recursive: true });
    mkdirSync(empty);
    expect(probeInChild({ ASCEND_HOME_PATH: home, LD_LIBRARY_PATH: `${empty}:${sim.splitDir}` })).toEqual({
      found: true,
      path: `${sim.splitDir}/libacl_rt.so + ${sim.splitDir}/libacl_mdl.so`,
      variant: 'split',
      tried: [
        `${home}/lib64/libascendcl.so: ${NOT_FOUND}`,
        `${empty}/libascendcl.so: ${NOT_FOUND}`,
        `${sim.splitDir}/libascendcl.so: ${NOT_FOUND}`,
        `libascendcl.so: ${NOT_FOUND}`,
        `${home}/lib64/libacl_rt.so: ${NOT_FOUND}`,
        `${empty}/libacl_rt.so: ${NOT_FOUND}`,
      ],
    });
    symlinkSync(sim.fullDir, join(env.scratchDir, 'lib64'));
    expect(probeInChild({ ASCEND_HOME_PATH: env.scratchDir, LD_LIBRARY_PATH: sim.splitDir })).toEqual({
      found: true, path: `${env.scratchDir}/lib64/libascendcl.so`, variant: 'ascendcl', tried: [],
    });
    expect(probeInChild({})).toEqual({ found: false, tried: [`libascendcl.so: ${NOT_FOUND}`, `libacl_rt.so: ${NOT_FOUND}`] });
  });

  it('runs a model end to end through the split pair', async () => {
    const counters = createRequire(import.meta.url)(sim.countersAddon) as { counter(file: string, name: string): number };
    const model = await env.binding.loadModel({ libraryPath: sim.splitDir, deviceId: 0, file: env.modelFile('add_dyn') });
    const [sum] = await model.execute([f32(1, 2, 3, 4), f32(10, 20, 30, 40)], 1);
    expect(new Float32Array(sum!)).toEqual(f32(11, 22, 33, 44));
    expect(counters.counter(sim.splitRuntimeLibrary, 'executes')).toBe(1);
    await model.unload();
    expect(counters.counter(sim.splitRuntimeLibrary, 'acl_init_calls')).toBe(1);
    expect(counters.counter(sim.splitRuntimeLibrary, 'acl_finalize_calls')).toBe(1);
    expect(counters.counter(sim.splitRuntimeLibrary, 'device_allocs')).toBe(0);
  });
});
