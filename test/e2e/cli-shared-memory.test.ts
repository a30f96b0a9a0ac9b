import { randomUUID } from 'node:crypto';
import { readFileSync, rmSync, writeFileSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { startCli } from './cli-harness.js';

const keys = { input: `/serve-fn-e2e-input-${randomUUID()}`, output: `/serve-fn-e2e-output-${randomUUID()}` };
afterAll(() => Object.values(keys).forEach((key) => rmSync(`/dev/shm${key}`, { force: true })));

const int32 = (values: number[]): Buffer => Buffer.from(new Int32Array(values).buffer);
const INPUT0 = Array.from({ length: 16 }, (_, i) => i);

describe('serve-fn start: system shared memory', () => {
  it('serves an ONNX model on a worker thread with its inputs and outputs in the client\'s regions, and keeps serving after a bad range', async () => {
    writeFileSync(`/dev/shm${keys.input}`, Buffer.concat([int32(INPUT0), int32(INPUT0.map(() => 1))]));
    writeFileSync(`/dev/shm${keys.output}`, Buffer.alloc(128));
    const cli = await startCli(['start', 'examples/triton-repository/models', '--host', '127.0.0.1', '--model-control-mode', 'explicit', '--load-model', 'add_sub']);
    try {
      await cli.waitForOutput(/serve-fn ready at|"msg":"serve-fn ready/);
      const post = (path: string, body: unknown) =>
        fetch(`${cli.base}/v2${path}`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
      expect(((await (await fetch(`${cli.base}/v2`)).json()) as { extensions: string[] }).extensions).toContain('system_shared_memory');
      expect((await post('/systemsharedmemory/region/input_data/register', { key: keys.input, offset: 0, byte_size: 128 })).status).toBe(200);
      expect((await post('/systemsharedmemory/region/output_data/register', { key: keys.output, offset: 0, byte_size: 128 })).status).toBe(200);
      const region = (name: string, offset: number) => ({ shared_memory_region: name, shared_memory_byte_size: 64, ...(offset ? { shared_memory_offset: offset } : {}) });
      const infer = (input1Offset: number) =>
        post('/models/add_sub/infer', {
          inputs: [
            { name: 'INPUT0', datatype: 'INT32', shape: [1, 16], parameters: region('input_data', 0) },
            { name: 'INPUT1', datatype: 'INT32', shape: [1, 16], parameters: region('input_data', input1Offset) },
          ],
          outputs: [
            { name: 'OUTPUT0', parameters: region('output_data', 0) },
            { name: 'OUTPUT1', parameters: region('output_data', 64) },
          ],
        });
      const bad = await infer(96);
      expect({ status: bad.status, body: await bad.json() }).toEqual({
        status: 400,
        body: { error: "Invalid offset + byte size for shared memory region: 'input_data'", code: 'SF_ERR_SHM_BYTE_SIZE_INVALID' },
      });
      const res = await infer(64);
      expect(res.status).toBe(200);
      expect(((await res.json()) as { outputs: { name: string; parameters: object }[] }).outputs.map((o) => [o.name, o.parameters])).toEqual([
        ['OUTPUT0', { shared_memory_region: 'output_data', shared_memory_byte_size: 64 }],
        ['OUTPUT1', { shared_memory_region: 'output_data', shared_memory_byte_size: 64, shared_memory_offset: 64 }],
      ]);
      const out = readFileSync(`/dev/shm${keys.output}`);
      expect([...new Int32Array(out.buffer, out.byteOffset, 32)]).toEqual([...INPUT0.map((v) => v + 1), ...INPUT0.map((v) => v - 1)]);
      expect((await post('/systemsharedmemory/unregister', {})).status).toBe(200);
      expect(await fetch(`${cli.base}/v2/systemsharedmemory/status`).then((r) => r.json())).toEqual([]);
    } finally {
      expect(await cli.stop()).toBe(0);
    }
  });
});
