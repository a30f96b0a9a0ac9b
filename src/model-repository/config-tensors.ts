import { createError } from '../errors/index.js';
import type { ConfigTensor } from '../spec/config-tensor.js';
import { fromConfigDatatype } from '../tensor/datatype-info.js';
import type { ModelConfig, ModelInput, ModelOutput } from './model-config.js';

export interface ConfigTensors {
  readonly inputs: readonly ConfigTensor[];
  readonly outputs: readonly ConfigTensor[];
}

/** The configuration's inputs and outputs with KServe datatypes; dims must be sizes >= 1 or -1. */
export function configTensors(config: ModelConfig): ConfigTensors {
  const read = (kind: 'input' | 'output', tensor: ModelInput | ModelOutput): ConfigTensor => {
    const datatype = fromConfigDatatype(tensor.data_type);
    if (datatype === undefined) throw createError('SF_ERR_CONFIG_INVALID', config.name, `${kind} '${tensor.name}' needs a data_type (got ${tensor.data_type})`);
    if (tensor.name === '') throw createError('SF_ERR_CONFIG_INVALID', config.name, `an ${kind} has no name`);
    if (tensor.dims.some((d) => d === 0 || d < -1)) {
      throw createError('SF_ERR_CONFIG_INVALID', config.name, `${kind} '${tensor.name}' has dims [${tensor.dims.join(',')}]; each must be a size >= 1 or -1`);
    }
    return { name: tensor.name, datatype, dims: tensor.dims, reshape: tensor.reshape?.shape, optional: 'optional' in tensor && tensor.optional };
  };
  return { inputs: config.input.map((t) => read('input', t)), outputs: config.output.map((t) => read('output', t)) };
}
