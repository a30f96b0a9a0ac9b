import { createTensor, type ExecuteRequest, type ExecuteResponse, type TensorModel } from '../../../../../src/index.js';
import { REQUEST_FLAG_SEQUENCE_START } from '../../../../../src/instance/tensor-model-api.js';

/** OUTPUT = INPUT + 1 on the START request of a sequence, INPUT otherwise. */
export default class SimpleSequence implements TensorModel {
  execute(requests: readonly ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const input = request.input('INPUT')!;
      const start = (request.flags & REQUEST_FLAG_SEQUENCE_START) !== 0 ? 1 : 0;
      return { outputs: [createTensor('OUTPUT', 'INT32', input.shape, Array.from(input.data as Int32Array, (v) => v + start))] };
    });
  }
}
