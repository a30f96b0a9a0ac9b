import { randomFillSync } from 'node:crypto';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { createError, type ServeFnError } from '../errors/index.js';
import type { ConfigTensor } from '../spec/config-tensor.js';
import type { WarmupRun } from '../inference/tensor-model-version.js';
import { tensorFromBytes } from '../tensor/binary-codec.js';
import { DATATYPE_INFO, fromConfigDatatype } from '../tensor/datatype-info.js';
import { createTensor, elementCount } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import type { ModelConfig, ModelWarmupInput } from './model-config.js';
import { pathInside } from './repository-scan.js';

/**
 * Triton's model_warmup (Triton's user_guide/model_configuration.md): each entry becomes `batch_size` requests of one row
 * each, run together as one execution, `count` times (0 counts as once). Data is zeros, random
 * bytes (0/1 for BOOL; empty elements for BYTES, as Triton), or the raw row-major contents of a
 * file in `<model>/warmup/` (BYTES elements length-prefixed, as in the binary protocol).
 */
export function warmupRuns(config: ModelConfig, inputs: readonly ConfigTensor[], modelDir: string): WarmupRun[] {
  return config.model_warmup.map((warmup) => {
    const invalid = (why: string): ServeFnError => createError('SF_ERR_CONFIG_INVALID', config.name, `model_warmup '${warmup.name}' ${why}`);
    const maxRows = Math.max(1, config.max_batch_size);
    if (warmup.batch_size < 1 || warmup.batch_size > maxRows) throw invalid(`has batch_size ${warmup.batch_size}; it must be 1..${maxRows}`);
    for (const name of Object.keys(warmup.inputs)) {
      if (!inputs.some((i) => i.name === name)) throw invalid(`gives input '${name}', which the model does not have`);
    }
    const makers = inputs.flatMap((spec) => {
      const input = warmup.inputs[spec.name];
      if (input === undefined) {
        if (spec.optional) return [];
        throw invalid(`gives no data for input '${spec.name}'`);
      }
      return [tensorMaker(spec, input, config.max_batch_size > 0, modelDir, invalid)];
    });
    return {
      name: warmup.name,
      count: Math.max(1, warmup.count),
      requests: () => Array.from({ length: warmup.batch_size }, () => ({ inputs: makers.map((make) => make()), outputs: outputNames(config), parameters: {} })),
    };
  });
}

function outputNames(config: ModelConfig): string[] {
  return config.output.map((o) => o.name);
}

function tensorMaker(
  spec: ConfigTensor,
  input: ModelWarmupInput,
  batched: boolean,
  modelDir: string,
  invalid: (why: string) => ServeFnError,
): () => Tensor {
  const datatype = fromConfigDatatype(input.data_type);
  if (datatype !== spec.datatype) throw invalid(`gives input '${spec.name}' as ${input.data_type}, but the model takes ${DATATYPE_INFO[spec.datatype].configName}`);
  if (input.dims.some((d) => d < 0)) throw invalid(`gives input '${spec.name}' dims [${input.dims.join(',')}]; warmup dims must be sizes`);
  const shape = batched ? [1, ...input.dims] : [...input.dims];
  if (input.input_data_file !== undefined) {
    const bytes = readWarmupFile(modelDir, input.input_data_file, invalid);
    try {
      tensorFromBytes(spec.name, datatype, shape, bytes);
    } catch (err) {
      throw invalid(`input_data_file '${input.input_data_file}' does not fit input '${spec.name}': ${(err as Error).message}`);
    }
    // Each run sends (and so detaches) its tensors: every run gets its own copy of the file's bytes.
    return () => tensorFromBytes(spec.name, datatype, shape, new Uint8Array(bytes));
  }
  const count = elementCount(shape);
  if (datatype === 'BYTES') return () => createTensor(spec.name, datatype, shape, Array.from({ length: count }, () => new Uint8Array(0)));
  const ArrayType = DATATYPE_INFO[datatype].arrayType!;
  return () => {
    const data = new ArrayType(count);
    if (input.random_data) {
      randomFillSync(data);
      if (datatype === 'BOOL') for (let i = 0; i < count; i++) (data as Uint8Array)[i] &= 1;
    }
    return createTensor(spec.name, datatype, shape, data);
  };
}

/** A file inside `<model>/warmup/`; anything that would leave that folder is refused. */
function readWarmupFile(modelDir: string, file: string, invalid: (why: string) => ServeFnError): Uint8Array {
  const folder = join(modelDir, 'warmup');
  const path = pathInside(folder, file);
  if (path === undefined) throw invalid(`names input_data_file '${file}', which is outside ${folder}`);
  try {
    return readFileSync(path);
  } catch (err) {
    throw invalid(`cannot read input_data_file ${path}: ${(err as Error).message}`);
  }
}
