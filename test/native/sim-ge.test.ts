import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import * as ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildCastModel, buildOnnxModel } from '../../src/backends/onnx/onnx-model-builder.js';
import { buildSimulatedAcl } from './build-sim.js';
import { buildSimCann, type SimCann } from './build-sim-ge.js';
import { REAL_HARDWARE, denseOnnxModel } from './npu-test-env.js';

/** y = x · W + b, x [batch, 3]: the graph sim-ge-check drives. */
const denseModel = denseOnnxModel({ relu: false });

interface SimOnnxAddon {
  encodeOm(library: string, onnx: Uint8Array, gears: readonly number[], fp16Compute: boolean): Uint8Array;
}

/** The program's "name value" lines as an object. */
function lines(output: string): Record<string, string> {
  return Object.fromEntries(output.split('\n').filter(Boolean).map((line) => {
    const space = line.indexOf(' ');
    return space < 0 ? [line, ''] : [line.slice(0, space), line.slice(space + 1)];
  }));
}

const floats = (text: string) => Float32Array.from(text.split(',').map(Number));

// The GE simulation must refuse each misuse the addon avoids, or the addon's GE tests prove nothing.
describe.skipIf(REAL_HARDWARE)('simulated GE libraries (test/native/sim-ge)', () => {
  let cann: SimCann;
  let dir: string;
  let dense: string;
  let env: NodeJS.ProcessEnv;
  const check = (args: readonly string[], extra: NodeJS.ProcessEnv = {}) =>
    lines(execFileSync(cann.geCheck, args, { encoding: 'utf8', env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] }));

  /** ONNX Runtime CPU, in this process: the independent computation the simulation is checked against. */
  async function runOnnx(model: Uint8Array, feeds: Record<string, ort.Tensor>): Promise<ort.Tensor> {
    const session = await ort.InferenceSession.create(model);
    try {
      return Object.values(await session.run(feeds))[0];
    } finally {
      await session.release();
    }
  }

  /** Nearest binary16 values, by ONNX Runtime's own Cast there and back. */
  async function toHalf(values: Float32Array): Promise<Float32Array> {
    const half = await runOnnx(buildCastModel('FP32', 'FP16'), { INPUT0: new ort.Tensor('float32', values, [values.length]) });
    const back = await runOnnx(buildCastModel('FP16', 'FP32'), { INPUT0: half });
    return back.data as Float32Array;
  }

  beforeAll(() => {
    cann = buildSimCann();
    env = { ...process.env, SIM_ORT_LIBRARY: buildSimulatedAcl().ortLibrary };
    delete env.GE_SIM_FAIL;
    delete env.GE_SIM_EXECUTE_DELAY_MS;
    dir = mkdtempSync(join(tmpdir(), 'serve-fn-sim-ge-'));
    dense = join(dir, 'dense.onnx');
    writeFileSync(dense, denseModel);
    writeFileSync(join(dir, 'not-a-model.onnx'), 'plain text');
  });
  afterAll(() => rmSync(dir, { recursive: true, force: true }));

  it('builds a CANN 8.5.0 home: real sonames, NEEDED on libascendcl.so, $ORIGIN rpath', () => {
    for (const library of ['libgraph.so', 'libfmk_onnx_parser.so', 'libge_runner.so', 'libge_compiler.so']) {
      const dynamic = execFileSync('readelf', ['-d', join(cann.lib64, library)], { encoding: 'utf8' });
      expect(dynamic).toContain(`Library soname: [${library}]`);
      expect(dynamic).toContain('Shared library: [libascendcl.so]');
      expect(dynamic).toContain('Library runpath: [$ORIGIN]');
      if (library !== 'libgraph.so') expect(dynamic).toContain('Shared library: [libgraph.so]');
    }
    expect(readFileSync(join(cann.home, 'version.cfg'), 'utf8')).toMatch(/^version=8\.5\.0$/m);
    expect(readFileSync(join(cann.home, 'ascend_toolkit_install.info'), 'utf8')).toMatch(/^version=8\.5\.0$/m);
    expect(buildSimCann()).toEqual(cann);
  });

  it('exports the GE 8.5.0 signatures serve-fn calls and the sim_* hooks, nothing else', () => {
    const map = 'std::map<ge::AscendString, ge::AscendString, std::less<ge::AscendString>, std::allocator<std::pair<ge::AscendString const, ge::AscendString> > >';
    const tensors = 'std::vector<gert::Tensor, std::allocator<gert::Tensor> >';
    const exported = (library: string) => [...new Set(
      execFileSync('nm', ['-DC', '--defined-only', join(cann.lib64, library)], { encoding: 'utf8' })
        .trim().split('\n').map((line) => line.replace(/^\S+ \S /, '')),
    )].sort();
    // Written from hicann/metadef 8.5.0 ascend_string.h, types.h and hicann/ge 8.5.0 graph.h, ge_api.h, onnx_parser.h, ge_ir_build.h.
    expect(exported('libgraph.so')).toEqual([
      'ge::AscendString::AscendString(char const*)', 'ge::AscendString::AscendString(char const*, unsigned long)',
      'ge::AscendString::Find(ge::AscendString const&) const', 'ge::AscendString::GetLength() const',
      'ge::AscendString::GetString() const', 'ge::AscendString::Hash() const',
      'ge::AscendString::operator!=(char const*) const', 'ge::AscendString::operator!=(ge::AscendString const&) const',
      'ge::AscendString::operator<(ge::AscendString const&) const', 'ge::AscendString::operator<=(ge::AscendString const&) const',
      'ge::AscendString::operator==(char const*) const', 'ge::AscendString::operator==(ge::AscendString const&) const',
      'ge::AscendString::operator>(ge::AscendString const&) const', 'ge::AscendString::operator>=(ge::AscendString const&) const',
      'ge::GetSizeInBytes(long, ge::DataType)', 'ge::Graph::Graph(char const*)',
      'sim_ge_count', 'sim_ge_counter', 'sim_ge_delay', 'sim_ge_fail', 'sim_ge_gauge', 'sim_ge_injected', 'sim_ge_reset_peaks', 'sim_ge_take_error',
    ].sort());
    expect(exported('libge_runner.so')).toEqual([
      'GeSessionExecuteGraphWithStreamAsync', 'GeSessionLoadGraph',
      'ge::GEFinalize()', `ge::GEInitialize(${map} const&)`, 'ge::GEGetErrorMsgV2()',
      `ge::Session::Session(${map} const&)`, 'ge::Session::~Session()',
      'ge::Session::AddGraph(unsigned int, ge::Graph const&)', `ge::Session::AddGraph(unsigned int, ge::Graph const&, ${map} const&)`,
      'ge::Session::AddGraphWithCopy(unsigned int, ge::Graph const&)',
      `ge::Session::AddGraphWithCopy(unsigned int, ge::Graph const&, ${map} const&)`,
      'ge::Session::RemoveGraph(unsigned int)', 'ge::Session::CompileGraph(unsigned int)', 'ge::Session::GetSessionId() const',
      `ge::Session::LoadGraph(unsigned int, ${map} const&, void*) const`,
      `ge::Session::ExecuteGraphWithStreamAsync(unsigned int, void*, ${tensors} const&, ${tensors}&)`,
      'sim_counter', 'sim_reset_peaks',
    ].sort());
    expect(exported('libfmk_onnx_parser.so')).toEqual([
      `ge::aclgrphParseONNX(char const*, ${map} const&, ge::Graph&)`,
      `ge::aclgrphParseONNXFromMem(char const*, unsigned long, ${map} const&, ge::Graph&)`,
    ]);
    expect(exported('libge_compiler.so')).toEqual([
      'ge::aclgrphBuildFinalize()', `ge::aclgrphBuildInitialize(${map}&)`,
      `ge::aclgrphBuildModel(ge::Graph const&, ${map} const&, ge::ModelBufferData&)`,
      'ge::aclgrphSaveModel(char const*, ge::ModelBufferData const&)',
    ].sort());
  });

  it('enforces the documented call order and refuses each misuse with its GE status', () => {
    const { 'input-values': _input, 'output-values': _output, 'fp16-output-values': _fp16, ...statuses } =
      check(['lifecycle', dense, join(dir, 'not-a-model.onnx')]);
    expect(statuses).toEqual({
      'ge-initialize-before-acl-init': '145001',
      'session-before-ge-initialize-refused': '1',
      'add-graph-on-refused-session': '145001',
      'acl-init': '0',
      'ge-initialize-without-device': '145001',
      'set-device': '0',
      'ge-initialize-unsimulated-precision': '145000',
      'ge-initialize': '0',
      'ge-initialize-again': '4294967295',
      'ge-initialize-again-says-why': '1',
      'ge-initialize-calls': '5',
      'parse-missing-file': '145002',
      'parse-not-onnx': '4294967295',
      'parse-unsimulated-option': '50331649',
      'parse-shape-unknown-input': '50331649',
      'parse-shape-against-fixed-dim': '50331649',
      parse: '0',
      'parse-from-memory': '0',
      'parse-calls': '7',
      sessions: '1',
      'add-unparsed-graph': '145000',
      'add-dynamic-dims-without-input-shape': '145000',
      'add-gear-of-wrong-arity': '145000',
      'add-graph': '0',
      'add-same-graph-id': '145000',
      'add-static-copy': '0',
      'graphs-added': '2',
      'load-before-compile': '545001',
      'compile-unknown-graph': '145003',
      compile: '0',
      'compile-static': '0',
      'graphs-compiled': '2',
      'execute-before-load': '145003',
      load: '0',
      'load-again': '145009',
      'load-static': '0',
      'load-graph-calls': '4',
      'graphs-loaded': '2',
      'execute-host-memory-input': '145007',
      'execute-allocation-too-small': '145006',
      'execute-batch-not-a-gear': '145021',
      'execute-batch-not-a-gear-says-why': '1',
      'execute-wrong-data-type': '145022',
      'execute-no-inputs': '145000',
      'execute-on-other-stream': '145000',
      'execute-static-other-shape': '145021',
      'executes-after-refusals': '0',
      'execute-ge-outputs': '0',
      'ge-output-count': '1',
      'ge-output-dim-0': '4',
      'ge-output-dim-1': '2',
      'ge-allocated-outputs': '1',
      'ge-outputs-in-device-memory': '1',
      'ge-allocated-outputs-after-clear': '0',
      'device-allocs-after-clear': '0',
      'execute-caller-outputs': '0',
      'caller-outputs-equal-ge-outputs': '1',
      'execute-caller-output-too-small': '145006',
      executes: '2',
      'session-both-precisions-refused': '1',
      'execute-fp16-session': '0',
      'add-graph-unsimulated-precision': '145000',
      'add-graph-fp16': '0',
      'graph-fp16-in-origin-session-equals-fp16-session': '1',
      'remove-fp16-graph': '0',
      'session-bad-device-id-refused': '1',
      'load-from-thread-on-other-device': '145000',
      'load-on-session-device': '0',
      'execute-input-on-other-device': '145007',
      'remove-unknown-graph': '145003',
      'remove-graph': '0',
      'graphs-added-after-remove': '1',
      'graphs-compiled-after-remove': '1',
      'graphs-loaded-after-remove': '1',
      'lifecycle-errors-after-outputs-outlive-session': '1',
      'outputs-outlive-session-says-why': '1',
      'ge-allocated-outputs-at-end': '0',
      'finalize-with-sessions-alive': '4294967295',
      'finalize-with-sessions-alive-says-why': '1',
      'compile-after-finalize': '145001',
      'lifecycle-errors-after-session-outlives-finalize': '2',
      'finalize-again': '145001',
      'ge-finalize-calls': '2',
      'ge-initialize-after-finalize': '0',
      'old-session-after-reinitialize': '145001',
      'finalize-with-stale-session': '0',
    });
  });

  it('computes what ONNX Runtime CPU computes, and rounds through binary16 in an fp16 session', async () => {
    const result = check(['lifecycle', dense, join(dir, 'not-a-model.onnx')]);
    const x = floats(result['input-values']);
    expect(x).toHaveLength(12);
    const exact = await runOnnx(denseModel, { x: new ort.Tensor('float32', x, [4, 3]) });
    expect(floats(result['output-values'])).toEqual(exact.data);
    const rounded = await runOnnx(denseModel, { x: new ort.Tensor('float32', await toHalf(x), [4, 3]) });
    const fp16 = floats(result['fp16-output-values']);
    expect(fp16).toEqual(await toHalf(rounded.data as Float32Array));
    expect(fp16).not.toEqual(exact.data);
  });

  it('builds an OM the simulated AscendCL encoder writes, saved under the documented .om name', () => {
    expect(check(['build', dense, dir])).toEqual({
      'build-before-initialize': '145001',
      'initialize-without-soc-version': '145000',
      initialize: '0',
      'initialize-again': '4294967295',
      'build-unsimulated-option': '145000',
      'build-dynamic-without-input-shape': '145000',
      'build-gears-on-fixed-batch': '145000',
      'build-empty-graph': '145000',
      build: '0',
      'build-calls': '6',
      'model-length-positive': '1',
      save: '0',
      'saved-with-om-suffix': '1',
      'saved-without-suffix-absent': '1',
      'save-empty-model': '145000',
      'save-unwritable': '145002',
      'build-static-default-precision': '0',
      'save-static': '0',
      'finalize-twice-says-why': '1',
      'build-after-finalize': '145001',
    });
    const acl = buildSimulatedAcl();
    const encoder = createRequire(import.meta.url)(acl.onnxAddon) as SimOnnxAddon;
    expect(readFileSync(join(dir, 'converted.om'))).toEqual(Buffer.from(encoder.encodeOm(acl.fullLibrary, denseModel, [1, 4, 8], false)));
    expect(readFileSync(join(dir, 'static.om'))).toEqual(Buffer.from(encoder.encodeOm(acl.fullLibrary, denseModel, [], true)));
  });

  it('counts executes overlapping across sessions, and sim_reset_peaks clears the peak', () => {
    expect(check(['concurrency', dense], { GE_SIM_EXECUTE_DELAY_MS: '300' })).toEqual({
      'slot-a': '0',
      'slot-b': '0',
      executes: '2',
      'max-concurrent-executes': '2',
      'max-concurrent-executes-after-reset': '0',
      'sessions-at-end': '0',
      finalize: '0',
    });
  });

  const FLOW = ['GEInitialize', 'aclgrphParseONNX', 'AddGraph', 'CompileGraph', 'LoadGraph', 'ExecuteGraphWithStreamAsync', 'RemoveGraph', 'GEFinalize'];

  it('runs the plain flow without GE_SIM_FAIL', () => {
    expect(check(['flow', dense])).toEqual({ ...Object.fromEntries(FLOW.map((call) => [call, '0'])), 'first-error': '' });
  });

  it.each(FLOW)('GE_SIM_FAIL=%s:145000 fails that call with the status and GEGetErrorMsgV2 text', (call) => {
    const result = check(['flow', dense], { GE_SIM_FAIL: `${call}:145000` });
    expect(result[call]).toBe('145000');
    expect(result['first-error']).toBe(`[sim ge 145000] ${call}: injected failure`);
    for (const earlier of FLOW.slice(0, FLOW.indexOf(call))) expect(result[earlier]).toBe('0');
  });

  it('GE_SIM_FAIL=Session refuses the construction, and the calls on that session fail as not initialised', () => {
    const result = check(['flow', dense], { GE_SIM_FAIL: 'Session:145000' });
    expect(result['first-error']).toBe('[sim ge 145000] Session: injected failure');
    expect([result.AddGraph, result.CompileGraph, result.LoadGraph]).toEqual(['145001', '145001', '145001']);
    expect(result.GEFinalize).toBe('0');
  });

  it('GE_SIM_FAIL reaches the compiler calls too, which still count', () => {
    const result = check(['build', dense, dir], { GE_SIM_FAIL: 'aclgrphBuildModel:145000' });
    expect([result.build, result['build-static-default-precision'], result['build-calls']]).toEqual(['145000', '145000', '6']);
    expect(result.initialize).toBe('0');
  });

  it('GE_SIM_FAIL without a status injects 1343225857', () => {
    const result = check(['flow', dense], { GE_SIM_FAIL: 'CompileGraph' });
    expect(result.CompileGraph).toBe('1343225857');
    expect(result['first-error']).toBe('[sim ge 1343225857] CompileGraph: injected failure');
  });
});
