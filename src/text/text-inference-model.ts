import { createError } from '../errors/index.js';
import type { InferenceModelInfo, InferRequest, InferResponse, RepositoryIndexEntry } from '../inference/inference-model.js';
import type { ServerModel } from '../inference/model-catalogue.js';
import { validateInferRequest } from '../inference/request-validation.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor, TensorSpec } from '../spec/tensor.js';
import type { TextTask } from './model-folder.js';
import { expectedPhrase, fieldReaders, type FieldProblem } from './request-fields.js';
import type { TextEngine } from './text-engine.js';

/** Serve-fn's own platform: Triton has none for a tokenizing text model. */
const TEXT_PLATFORM = 'serve-fn';

const TEXT: TensorSpec = { name: 'text', datatype: 'BYTES', shape: [-1] };
const TEXT_PAIR: TensorSpec = { name: 'text_pair', datatype: 'BYTES', shape: [-1], optional: true };
const QUERY: TensorSpec = { name: 'query', datatype: 'BYTES', shape: [1] };

/** Each task's tensors: UTF-8 texts in, FP32 out (the KServe v2 datatypes Triton clients send and read). */
const INTERFACES = {
  embed: { inputs: [TEXT], outputs: [{ name: 'embedding', datatype: 'FP32', shape: [-1, -1] }] },
  sparse: { inputs: [TEXT], outputs: [{ name: 'embedding', datatype: 'FP32', shape: [-1, -1] }] },
  classify: { inputs: [TEXT, TEXT_PAIR], outputs: [{ name: 'scores', datatype: 'FP32', shape: [-1, -1] }] },
  rerank: { inputs: [QUERY, TEXT], outputs: [{ name: 'score', datatype: 'FP32', shape: [-1] }] },
} as const satisfies Record<TextTask, { inputs: TensorSpec[]; outputs: TensorSpec[] }>;

/**
 * A text model as a KServe v2 model, on HTTP and gRPC, so Triton clients and ensembles can call
 * it: a BYTES tensor of texts in, FP32 out, run by the same TextEngine as the text protocols.
 * Request parameters carry the options (`truncate`, `truncation_direction`, `normalize`,
 * `dimensions`, `prompt_name`, `raw_scores`). A sparse model answers dense vocabulary-wide rows.
 */
export class TextInferenceModel implements ServerModel {
  readonly info: InferenceModelInfo;

  constructor(
    readonly text: TextEngine,
    version: string,
  ) {
    const { name, task, labels } = text.info;
    const { inputs, outputs } = INTERFACES[task] as { inputs: readonly TensorSpec[]; outputs: readonly TensorSpec[] };
    const tensorConfig = (t: TensorSpec) => ({ name: t.name, data_type: `TYPE_${t.datatype === 'BYTES' ? 'STRING' : t.datatype}`, dims: [...t.shape], ...(t.optional ? { optional: true } : {}) });
    this.info = {
      name, version, platform: TEXT_PLATFORM, inputs, outputs, maxBatchSize: 0, decoupled: false,
      config: {
        name, platform: TEXT_PLATFORM, backend: TEXT_PLATFORM, max_batch_size: 0, input: inputs.map(tensorConfig), output: outputs.map(tensorConfig),
        parameters: { task: { string_value: task }, ...(labels.length > 0 ? { labels: { string_value: labels.join(',') } } : {}) },
      },
    };
  }

  ready(): boolean {
    return this.text.ready();
  }

  indexEntry(): RepositoryIndexEntry {
    const { name, version } = this.info;
    return this.ready() ? { name, version, state: 'READY' } : { name, version, state: 'UNAVAILABLE', reason: 'its forward model is not ready' };
  }

  async infer(request: InferRequest): Promise<InferResponse> {
    const { wire } = validateInferRequest(this.info, request);
    const p = wire.parameters;
    const texts = (name: string): string[] | undefined => {
      const tensor = wire.inputs.find((t) => t.name === name);
      return tensor && (tensor.data as Uint8Array[]).map((bytes, i) => utf8(bytes, name, i));
    };
    // The client's disconnect (or a calling model's cancellation) takes its sequences off the forward queue.
    // Priority and timeout do not apply: the forward queue is TEI's, first come, first served, with no levels.
    const truncation = { truncate: parameters.optionalBoolean(p, 'truncate'), truncationDirection: parameters.truncationDirection(p, { anyCase: true }), signal: request.signal, trace: request.trace };
    const model = this.text;
    let output: Tensor;
    switch (model.info.task) {
      case 'embed': {
        const answer = await model.embed(texts('text')!, { ...truncation, normalize: parameters.optionalBoolean(p, 'normalize'), dimensions: parameters.optionalInteger(p, 'dimensions'), promptName: parameters.optionalString(p, 'prompt_name') });
        output = rowsTensor('embedding', answer.values);
        break;
      }
      case 'sparse': {
        const answer = await model.embedSparse(texts('text')!, { ...truncation, promptName: parameters.optionalString(p, 'prompt_name') });
        const width = model.tokenizer.vocabSize;
        output = rowsTensor('embedding', answer.values.map((entries) => {
          const row = new Float32Array(width);
          for (const { index, value } of entries) row[index] = value;
          return row;
        }));
        break;
      }
      case 'classify': {
        const first = texts('text')!;
        const second = texts('text_pair');
        if (second && second.length !== first.length) throw createError('SF_ERR_BAD_REQUEST', `'text_pair' has ${second.length} texts for ${first.length} in 'text'`);
        const answer = await model.predict(first.map((t, i) => (second ? [t, second[i]] as const : t)), { ...truncation, rawScores: parameters.optionalBoolean(p, 'raw_scores') });
        // predict sorts each row by score; the tensor keeps id2label's order.
        const labels = model.info.labels;
        output = rowsTensor('scores', answer.values.map((scored) => Float32Array.from(labels.length > 0 ? labels : scored.map((s) => s.label), (label) => scored.find((s) => s.label === label)?.score ?? 0)));
        break;
      }
      case 'rerank': {
        const answer = await model.rerank(texts('query')![0], texts('text')!, { ...truncation, rawScores: parameters.optionalBoolean(p, 'raw_scores') });
        output = createTensor('score', 'FP32', [answer.values.length], Float32Array.from(answer.values));
        break;
      }
    }
    const wanted = wire.outputs;
    return { modelName: this.info.name, modelVersion: this.info.version, id: request.id, outputs: wanted.length === 0 || wanted.includes(output.name) ? [output] : [] };
  }
}

function rowsTensor(name: string, rows: readonly Float32Array[]): Tensor {
  const width = rows[0]?.length ?? 0;
  const data = new Float32Array(rows.length * width);
  rows.forEach((row, i) => data.set(row, i * width));
  return createTensor(name, 'FP32', [rows.length, width], data);
}

const UTF8 = new TextDecoder('utf-8', { fatal: true });

function utf8(bytes: Uint8Array, name: string, index: number): string {
  try {
    return UTF8.decode(bytes);
  } catch {
    throw createError('SF_ERR_TENSOR_DATA', name, `element ${index} is not valid UTF-8 text.`);
  }
}

/** A bad request parameter: the KServe routes' 400 (HTTP) / INVALID_ARGUMENT (gRPC). */
function parameterError(problem: FieldProblem): Error {
  const what = 'missing' in problem ? 'is required' : `must be ${expectedPhrase(problem.expected)}`;
  return createError('SF_ERR_BAD_REQUEST', `parameter '${problem.field}' ${what}`);
}

const parameters = fieldReaders(parameterError);
