import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import { afterAll, describe, expect, it } from 'vitest';
import type { NativeGeConvertOptions, NpuNativeBinding } from '../../src/backends/npu/native-binding.js';
import { batchGears, convertBuildOptions, convertModel, existingFile, flagConflict, irOption } from '../../src/cli/convert-command.js';
import { ServeFnError } from '../../src/errors/index.js';

const dir = mkdtempSync(join(tmpdir(), 'serve-fn-convert-'));
const model = join(dir, 'model.onnx');
writeFileSync(model, 'onnx bytes');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function binding(convert?: (options: NativeGeConvertOptions) => Promise<{ file: string }>): NpuNativeBinding {
  return {
    probeLibrary: () => ({ found: false, tried: [] }),
    describeDevices: () => Promise.reject(new Error('not used')),
    loadModel: () => Promise.reject(new Error('not used')),
    ...(convert ? { convertGeModel: convert } : {}),
  };
}

describe('convertBuildOptions', () => {
  it('sets the ge::ir_option key of each flag, asking for origin precision by default', () => {
    expect(convertBuildOptions({ socVersion: 'Ascend310P3', output: 'm.om', inputShape: 'x:-1,3', dynamicBatchSize: '1,4,8' })).toEqual({
      'ge.socVersion': 'Ascend310P3',
      input_shape: 'x:-1,3',
      'ge.dynamicBatchSize': '1,4,8',
      'ge.exec.precision_mode_v2': 'origin',
    });
  });

  it('passes either precision flag instead of the default, and lets --option entries win', () => {
    expect(convertBuildOptions({ socVersion: 's', output: 'm', precisionMode: 'force_fp16' })).toEqual({ 'ge.socVersion': 's', 'ge.exec.precision_mode': 'force_fp16' });
    expect(convertBuildOptions({ socVersion: 's', output: 'm', precisionModeV2: 'fp16', options: { 'ge.socVersion': 't', log: 'error' } })).toEqual({
      'ge.socVersion': 't',
      'ge.exec.precision_mode_v2': 'fp16',
      log: 'error',
    });
  });
});

describe('the flag parsers', () => {
  it('takes batch gears as ATC writes them and refuses anything else', () => {
    expect(batchGears('1, 4,8')).toBe('1,4,8');
    for (const bad of ['', '1,,4', '0,4', '1;4', 'a']) expect(() => batchGears(bad), bad).toThrow(InvalidArgumentError);
  });

  it('collects repeated key=value options and refuses a bare key', () => {
    expect(irOption('b=2=3', irOption('a=1', undefined))).toEqual({ a: '1', b: '2=3' });
    expect(() => irOption('novalue', undefined)).toThrow(/expected key=value/);
    expect(() => irOption('=x', undefined)).toThrow(InvalidArgumentError);
  });

  it('accepts an existing file and refuses a missing one or a directory', () => {
    expect(existingFile(model)).toBe(model);
    expect(() => existingFile(join(dir, 'none.onnx'))).toThrow(`no ONNX model file at ${join(dir, 'none.onnx')}`);
    expect(() => existingFile(dir)).toThrow(InvalidArgumentError);
  });

  it('wants a -1 batch dimension in --input-shape for --dynamic-batch-size', () => {
    expect(flagConflict({ dynamicBatchSize: '1,4' })).toMatch(/needs --input-shape with -1/);
    expect(flagConflict({ dynamicBatchSize: '1,4', inputShape: 'x:2,-10' })).toMatch(/needs --input-shape/);
    expect(flagConflict({ dynamicBatchSize: '1,4', inputShape: 'a:2,3;x:-1,3' })).toBeUndefined();
    expect(flagConflict({ inputShape: 'x:2,3' })).toBeUndefined();
  });
});

describe('convertModel', () => {
  it('hands the addon the absolute model, the output as given, the parser and the build options', async () => {
    const calls: NativeGeConvertOptions[] = [];
    const file = await convertModel(model, {
      socVersion: 'Ascend910B3',
      output: 'out/m',
      inputShape: 'x:-1,3',
      dynamicBatchSize: '1,2',
      binding: binding(async (options) => {
        calls.push(options);
        return { file: '/abs/out/m.om' };
      }),
    });
    expect(file).toBe('/abs/out/m.om');
    expect(calls).toEqual([
      {
        file: resolve(model),
        output: 'out/m',
        parserOptions: { input_shape: 'x:-1,3' },
        buildOptions: { 'ge.socVersion': 'Ascend910B3', input_shape: 'x:-1,3', 'ge.dynamicBatchSize': '1,2', 'ge.exec.precision_mode_v2': 'origin' },
      },
    ]);
  });

  it('refuses an addon without GE with the way to build one', async () => {
    const error = await convertModel(model, { socVersion: 's', output: 'm.om', binding: binding() }).catch((err: unknown) => err);
    expect(error).toBeInstanceOf(ServeFnError);
    expect(error).toMatchObject({ code: 'SF_ERR_NPU_UNAVAILABLE', statusCode: 501 });
    expect((error as Error).message).toMatch(/no GE .*SERVE_FN_CANN_HOME.*serve-fn convert needs it$/);
  });

  it('reports a failed GE call with its function, status and GE message, keeping the native error as cause', async () => {
    const native = Object.assign(new Error('aclgrphBuildModel failed with GE status 1343225857: bad soc'), {
      geFunction: 'aclgrphBuildModel',
      geStatus: 1343225857,
      geMessage: 'bad soc',
    });
    const error = await convertModel(model, { socVersion: 's', output: 'm.om', binding: binding(() => Promise.reject(native)) }).catch((err: unknown) => err);
    expect(error).toMatchObject({ code: 'SF_ERR_NPU_GE', message: 'aclgrphBuildModel failed with GE status 1343225857: bad soc', cause: native });
  });

  it('reports any other native failure as a load failure of the model', async () => {
    const error = await convertModel(model, { socVersion: 's', output: 'm.om', binding: binding(() => Promise.reject(new Error('cannot write m.om'))) }).catch(
      (err: unknown) => err,
    );
    expect(error).toMatchObject({ code: 'SF_ERR_BACKEND_LOAD_FAILED', message: "Backend 'npu_ge' could not load 'model.onnx': cannot write m.om" });
  });
});
