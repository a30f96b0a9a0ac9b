import { createError, createTensor, type ExecuteRequest, type ExecuteResponse, type ModelContext, type TensorModel } from 'serve-fn';

/**
 * SCALED = VALUES × the `factor` parameter of config.pbtxt, TOTAL = the sum of each row of SCALED.
 * Like Triton's model.py, execute() gets every request of a batch and answers each one; a
 * request with a negative value gets an error of its own, the others still get their answers.
 */
export default class Scale implements TensorModel {
  private factor = 1;

  initialize(ctx: ModelContext): void {
    const parameters = ctx.config.parameters as Record<string, { string_value: string }>;
    this.factor = Number(parameters.factor.string_value);
  }

  execute(requests: readonly ExecuteRequest[]): ExecuteResponse[] {
    return requests.map((request) => {
      const values = request.input('VALUES')!;
      const data = values.data as Int32Array;
      if (data.some((v) => v < 0)) return { error: createError('SF_ERR_BAD_REQUEST', 'scale: VALUES must not be negative') };
      const [rows, columns] = values.shape;
      const scaled = Float32Array.from(data, (v) => v * this.factor);
      const totals = Float32Array.from({ length: rows }, (_, row) => scaled.subarray(row * columns, (row + 1) * columns).reduce((sum, v) => sum + v, 0));
      return { outputs: [createTensor('SCALED', 'FP32', values.shape, scaled), createTensor('TOTAL', 'FP32', [rows, 1], totals)] };
    });
  }
}
