import 'reflect-metadata';
import { describe, expect, it } from 'vitest';
import { Batch, Endpoint, Model, Tensors } from '../../src/decorators/index.js';
import { buildDefinition } from '../../src/definition/definition-builder.js';
import type { ModelClass } from '../../src/definition/model-definition.js';
import type { ExecuteRequest, ExecuteResponse } from '../../src/instance/tensor-model-api.js';
import type { TensorsOptions } from '../../src/metadata/records.js';
import { thrown } from '../helpers/thrown.js';

const IO: TensorsOptions = {
  inputs: [{ name: 'IN', datatype: 'FP32', dims: [-1, 3] }, { name: 'MASK', datatype: 'BOOL', dims: [1], optional: true }],
  outputs: [{ name: 'OUT', datatype: 'BYTES', dims: [1] }],
};

/** A class with @Tensors `options` and an execute method, batched when `batch` is given. */
function tensorClass(options: TensorsOptions, batch?: number): ModelClass {
  @Model({ name: 'tensors' })
  @Tensors(options)
  class Plain {
    execute(requests: ExecuteRequest[]): ExecuteResponse[] {
      return requests.map(() => ({ outputs: [] }));
    }
  }
  if (batch === undefined) return Plain;
  const size = batch;
  @Model({ name: 'tensors' })
  @Tensors(options)
  class Batched {
    @Batch(size, 500)
    execute(requests: ExecuteRequest[]): ExecuteResponse[] {
      return requests.map(() => ({ outputs: [] }));
    }
  }
  return Batched;
}

describe('@Tensors definitions', () => {
  it('freezes the declared tensors; a class with only a tensor interface serves', () => {
    const def = buildDefinition(tensorClass(IO));
    expect(def.endpoints).toEqual([]);
    expect(def.tensors).toEqual({
      inputs: [{ name: 'IN', datatype: 'FP32', dims: [-1, 3], optional: false }, { name: 'MASK', datatype: 'BOOL', dims: [1], optional: true }],
      outputs: [{ name: 'OUT', datatype: 'BYTES', dims: [1], optional: false }],
      maxBatchSize: 0,
    });
    expect(Object.isFrozen(def.tensors)).toBe(true);
    expect(Object.isFrozen(def.tensors!.inputs[0].dims)).toBe(true);
  });

  it('takes @Batch on execute as dynamic batching, and its size as max_batch_size unless one is given', () => {
    expect(buildDefinition(tensorClass(IO, 8)).tensors).toMatchObject({ maxBatchSize: 8, batch: { maxBatchSize: 8, maxQueueDelayUs: 500 } });
    expect(buildDefinition(tensorClass({ ...IO, maxBatchSize: 16 }, 8)).tensors).toMatchObject({ maxBatchSize: 16, batch: { maxBatchSize: 8 } });
    expect(buildDefinition(tensorClass({ ...IO, maxBatchSize: 4 })).tensors).toMatchObject({ maxBatchSize: 4 });
    expect(buildDefinition(tensorClass({ ...IO, maxBatchSize: 4 })).tensors?.batch).toBeUndefined();
  });

  const refused: [string, TensorsOptions, string, number?][] = [
    ['no inputs', { ...IO, inputs: [] }, 'needs at least one input ({ name, datatype, dims })'],
    ['no outputs', { ...IO, outputs: undefined as never }, 'needs at least one output ({ name, datatype, dims })'],
    ['a nameless input', { ...IO, inputs: [{ name: '', datatype: 'FP32', dims: [1] }] }, 'an input has no name'],
    ['a name twice', { ...IO, outputs: [IO.outputs[0], IO.outputs[0]] }, "declares output 'OUT' twice"],
    ['an unknown datatype', { ...IO, inputs: [{ name: 'IN', datatype: 'FLOAT' as never, dims: [1] }] }, `input 'IN' has datatype "FLOAT"; use one of BOOL, UINT8`],
    ['a dimension of 0', { ...IO, inputs: [{ name: 'IN', datatype: 'FP32', dims: [0] }] }, "input 'IN' has dims [0]; each must be a size >= 1 or -1"],
    ['dims that are not a list', { ...IO, inputs: [{ name: 'IN', datatype: 'FP32', dims: 3 as never }] }, "input 'IN' has dims 3; each must be a size >= 1 or -1"],
    ['an optional output', { ...IO, outputs: [{ name: 'OUT', datatype: 'FP32', dims: [1], optional: true }] }, 'outputs cannot be optional'],
    ['allowEmpty on an output', { ...IO, outputs: [{ name: 'OUT', datatype: 'FP32', dims: [-1], allowEmpty: true }] }, "output 'OUT': allowEmpty is a boolean of inputs"],
    ['an allowEmpty that is not a boolean', { ...IO, inputs: [{ name: 'IN', datatype: 'FP32', dims: [-1], allowEmpty: 'yes' as never }] }, "input 'IN': allowEmpty is a boolean of inputs"],
    ['a negative maxBatchSize', { ...IO, maxBatchSize: -1 }, 'maxBatchSize must be an integer >= 0 (got -1)'],
    ['@Batch without a batch dimension', { ...IO, maxBatchSize: 0 }, 'has maxBatchSize 0, so its requests have no batch dimension to batch along', 4],
  ];
  for (const [what, options, why, batch] of refused) {
    it(`refuses ${what} at definition time with SF_ERR_TENSORS_INVALID`, () => {
      const err = thrown(() => buildDefinition(tensorClass(options, batch)));
      expect(err.code).toBe('SF_ERR_TENSORS_INVALID');
      expect(err.message).toContain(`${batch === undefined ? 'Plain' : 'Batched'}: @Tensors ${why}`);
    });
  }

  it('refuses a class without an execute method, and an execute that is also an @Endpoint', () => {
    @Model({ name: 'no-execute' })
    @Tensors(IO)
    class NoExecute {
      @Endpoint('/x')
      run(): string {
        return 'x';
      }
    }
    expect(thrown(() => buildDefinition(NoExecute)).message).toBe('NoExecute: @Tensors needs an execute(requests) method that returns one response per request.');

    @Model({ name: 'both' })
    @Tensors(IO)
    class Both {
      @Endpoint('/x')
      execute(): string {
        return 'x';
      }
    }
    expect(thrown(() => buildDefinition(Both)).message).toBe('Both: @Tensors execute is also an @Endpoint: give the endpoint another method name.');
  });

  it('still refuses @Batch on a method that is neither an endpoint nor the tensor interface', () => {
    @Model({ name: 'stray' })
    class Stray {
      @Endpoint('/x')
      run(): string {
        return 'x';
      }

      @Batch(4)
      execute(requests: ExecuteRequest[]): ExecuteResponse[] {
        return requests.map(() => ({ outputs: [] }));
      }
    }
    expect(thrown(() => buildDefinition(Stray)).code).toBe('SF_ERR_BATCH_WITHOUT_ENDPOINT');
  });
});
