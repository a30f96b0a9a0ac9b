import { recordTensors } from '../metadata/reflection.js';
import type { TensorsOptions } from '../metadata/records.js';

/**
 * Gives a model class a KServe v2 tensor interface: the inputs and outputs it declares, served by
 * its `execute(requests)` method, shaped like Triton's Python backend (`TritonPythonModel.execute`):
 * it gets ExecuteRequests and returns one ExecuteResponse per request, in order. The model is then
 * reachable through `POST /v2/models/<name>/infer`, gRPC ModelInfer and `ctx.infer`, on the same
 * instances as its endpoints. `@Batch` on `execute` turns on dynamic batching.
 */
export function Tensors(options: TensorsOptions): ClassDecorator {
  return (target) => {
    recordTensors(target as unknown as new () => unknown, { options: { ...options } });
  };
}
