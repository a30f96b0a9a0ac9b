import { createTensor, type ExecuteRequest, type ExecuteResponse, type TensorModel } from '../../../../../src/index.js';

/** Triton's `simple_identity`: OUTPUT0 is INPUT0. */
export default class SimpleIdentity implements TensorModel {
  execute(requests: readonly ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const input = request.input('INPUT0')!;
      return { outputs: [createTensor('OUTPUT0', 'BYTES', input.shape, input.data as Uint8Array[])] };
    });
  }
}
