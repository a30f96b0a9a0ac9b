import { Batch, createError, createTensor, Model, Tensors, type ExecuteRequest, type ExecuteResponse } from '../../src/index.js';

/**
 * Triton's `simple` and `simple_string` example models written as decorated classes with a
 * @Tensors interface, so Triton's own client examples can be run against a decorated model
 * (run.sh with DECORATED=1) as well as against a repository.
 */
const VECTOR = { dims: [16] } as const;

const decoder = new TextDecoder('utf-8', { fatal: true });

@Model({ name: 'simple', version: '1' })
@Tensors({
  inputs: [{ name: 'INPUT0', datatype: 'INT32', ...VECTOR }, { name: 'INPUT1', datatype: 'INT32', ...VECTOR }],
  outputs: [{ name: 'OUTPUT0', datatype: 'INT32', ...VECTOR }, { name: 'OUTPUT1', datatype: 'INT32', ...VECTOR }],
  maxBatchSize: 8,
})
export class Simple {
  /** OUTPUT0 = INPUT0 + INPUT1 and OUTPUT1 = INPUT0 - INPUT1, element by element. */
  @Batch({ maxBatchSize: 8, maxQueueDelayUs: 100 })
  execute(requests: ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const a = request.input('INPUT0')!;
      const b = request.input('INPUT1')!.data as Int32Array;
      const x = a.data as Int32Array;
      return {
        outputs: [
          createTensor('OUTPUT0', 'INT32', a.shape, Int32Array.from(x, (v, i) => v + b[i])),
          createTensor('OUTPUT1', 'INT32', a.shape, Int32Array.from(x, (v, i) => v - b[i])),
        ],
      };
    });
  }
}

function integers(request: ExecuteRequest, name: string): number[] {
  const texts = (request.input(name)!.data as Uint8Array[]).map((element) => decoder.decode(element));
  const bad = texts.find((text) => !/^-?\d+$/.test(text));
  if (bad !== undefined) throw createError('SF_ERR_BAD_REQUEST', `simple_string: ${name} element '${bad}' is not an integer`);
  return texts.map(Number);
}

@Model({ name: 'simple_string', version: '1' })
@Tensors({
  inputs: [{ name: 'INPUT0', datatype: 'BYTES', ...VECTOR }, { name: 'INPUT1', datatype: 'BYTES', ...VECTOR }],
  outputs: [{ name: 'OUTPUT0', datatype: 'BYTES', ...VECTOR }, { name: 'OUTPUT1', datatype: 'BYTES', ...VECTOR }],
  maxBatchSize: 8,
})
export class SimpleString {
  /** The integers written as strings in INPUT0 and INPUT1, summed and subtracted, written back as strings. */
  execute(requests: ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      try {
        const a = integers(request, 'INPUT0');
        const b = integers(request, 'INPUT1');
        const shape = request.input('INPUT0')!.shape;
        return {
          outputs: [
            createTensor('OUTPUT0', 'BYTES', shape, a.map((v, i) => String(v + b[i]))),
            createTensor('OUTPUT1', 'BYTES', shape, a.map((v, i) => String(v - b[i]))),
          ],
        };
      } catch (err) {
        return { error: err as Error };
      }
    });
  }
}

@Model({ name: 'simple_identity', version: '1' })
@Tensors({ inputs: [{ name: 'INPUT0', datatype: 'BYTES', dims: [-1] }], outputs: [{ name: 'OUTPUT0', datatype: 'BYTES', dims: [-1] }], maxBatchSize: 8 })
export class SimpleIdentity {
  /** OUTPUT0 is INPUT0. */
  execute(requests: ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const input = request.input('INPUT0')!;
      return { outputs: [createTensor('OUTPUT0', 'BYTES', input.shape, input.data as Uint8Array[])] };
    });
  }
}
