import type { DecoupledResponse, DecoupledTensorModel, ExecuteRequest } from '../../../../../src/instance/tensor-model-api.js';

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** Triton's repeat backend: each element of IN in its own response, DELAY[i] ms apart; WAIT ms after the last. */
export default class RepeatInt32 implements DecoupledTensorModel {
  async *execute(request: ExecuteRequest): AsyncGenerator<DecoupledResponse> {
    const values = request.input('IN')!.data as Int32Array;
    const delays = request.input('DELAY')!.data as Uint32Array;
    for (let i = 0; i < values.length; i++) {
      await sleep(delays[i] ?? 0);
      yield {
        outputs: [
          { name: 'OUT', datatype: 'INT32', shape: [1], data: Int32Array.of(values[i]) },
          { name: 'IDX', datatype: 'UINT32', shape: [1], data: Uint32Array.of(i) },
        ],
      };
    }
    await sleep((request.input('WAIT')!.data as Uint32Array)[0]);
  }
}
