import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { configTensors } from '../../src/model-repository/config-tensors.js';
import { parseModelConfig } from '../../src/model-repository/model-config.js';
import { warmupRuns } from '../../src/model-repository/warmup-requests.js';
import { scratchFolder, writeFiles } from '../fixtures/repository/repository-files.js';

const dir = scratchFolder('warmup');
writeFiles(dir, { 'warmup/in.bin': new Uint8Array(Int32Array.from([7, -8]).buffer), 'warmup/short.bin': new Uint8Array(3) });
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const IO = `
max_batch_size: 4
input [ { name: "A" data_type: TYPE_INT32 dims: [ 2 ] }, { name: "B" data_type: TYPE_BOOL dims: [ 3 ] optional: true } ]
output [ { name: "OUT" data_type: TYPE_INT32 dims: [ 2 ] } ]`;

function runs(warmup: string, io = IO) {
  const config = parseModelConfig(`${io}\n${warmup}`, 'config.pbtxt', 'm').config;
  return warmupRuns(config, configTensors(config).inputs, dir);
}

describe('warmupRuns', () => {
  it('makes batch_size one-row requests, count times (0 = once), with zeros', () => {
    const [run] = runs('model_warmup [ { name: "zeros" batch_size: 3 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] zero_data: true } } } ]');
    expect(run.name).toBe('zeros');
    expect(run.count).toBe(1);
    const requests = run.requests();
    expect(requests).toHaveLength(3);
    expect(requests[0]).toEqual({ inputs: [{ name: 'A', datatype: 'INT32', shape: [1, 2], data: new Int32Array(2) }], outputs: ['OUT'], parameters: {} });
    expect(run.requests()[0].inputs[0].data).not.toBe(requests[0].inputs[0].data);
  });

  it('reads raw data files from the warmup folder, and random data', () => {
    const [fromFile, random] = runs(`model_warmup [
      { name: "file" batch_size: 1 count: 2 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] input_data_file: "in.bin" } } },
      { name: "random" batch_size: 1 inputs [ { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] random_data: true } },
                                              { key: "B" value { data_type: TYPE_BOOL dims: [ 3 ] random_data: true } } ] } ]`);
    expect(fromFile.count).toBe(2);
    expect(Array.from(fromFile.requests()[0].inputs[0].data as Int32Array)).toEqual([7, -8]);
    const bools = random.requests()[0].inputs[1];
    expect(bools.shape).toEqual([1, 3]);
    expect(Array.from(bools.data as Uint8Array).every((v) => v === 0 || v === 1)).toBe(true);
  });

  it.each([
    ['batch_size: 0 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] zero_data: true } }', 'has batch_size 0; it must be 1..4'],
    ['batch_size: 1 inputs { key: "Z" value { data_type: TYPE_INT32 dims: [ 2 ] zero_data: true } }', "gives input 'Z', which the model does not have"],
    ['batch_size: 1', "gives no data for input 'A'"],
    ['batch_size: 1 inputs { key: "A" value { data_type: TYPE_FP32 dims: [ 2 ] zero_data: true } }', "gives input 'A' as TYPE_FP32, but the model takes TYPE_INT32"],
    ['batch_size: 1 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] input_data_file: "../config.pbtxt" } }', `names input_data_file '../config.pbtxt', which is outside ${dir}/warmup`],
    ['batch_size: 1 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] input_data_file: "/etc/hostname" } }', `names input_data_file '/etc/hostname', which is outside ${dir}/warmup`],
    ['batch_size: 1 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] input_data_file: "." } }', `names input_data_file '.', which is outside ${dir}/warmup`],
    ['batch_size: 1 inputs { key: "A" value { data_type: TYPE_INT32 dims: [ 2 ] input_data_file: "short.bin" } }', "input_data_file 'short.bin' does not fit input 'A'"],
  ])('refuses %s', (entry, why) => {
    expect(() => runs(`model_warmup [ { name: "w" ${entry} } ]`)).toThrow(`Model configuration for 'm' is invalid: model_warmup 'w' ${why}`);
  });
});
