import { describe, expect, it } from 'vitest';
import type { InferenceModelInfo } from '../../src/inference/inference-model.js';
import { decodeGenerateRequest, encodeGenerateResponse } from '../../src/protocol/generate-json.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import { thrown } from '../helpers/thrown.js';

const info = (maxBatchSize: number): InferenceModelInfo => ({
  name: 'llm', version: '1', platform: 'serve-fn', maxBatchSize, config: {}, decoupled: true,
  inputs: [
    { name: 'text_input', datatype: 'BYTES', shape: [1] },
    { name: 'ids', datatype: 'INT64', shape: [-1, 2] },
  ],
  outputs: [{ name: 'text_output', datatype: 'BYTES', shape: [1] }],
});

const body = (json: string): Buffer => Buffer.from(json, 'utf8');
const plain = (t: { name: string; datatype: string; shape: readonly number[]; data: unknown }) => ({
  name: t.name, datatype: t.datatype, shape: [...t.shape],
  data: Array.isArray(t.data) ? t.data.map((b: Uint8Array) => Buffer.from(b).toString('utf8')) : Array.from(t.data as ArrayLike<unknown>),
});

describe('decodeGenerateRequest', () => {
  it('turns fields named after inputs into tensors and the other fields into parameters', () => {
    const request = decodeGenerateRequest(body('{"id":"7","text_input":"hi","ids":[[1,2],[3,4]],"temperature":0.5,"parameters":{"stream":true,"priority":2}}'), info(0));
    expect(request.id).toBe('7');
    expect(request.inputs.map(plain)).toEqual([
      { name: 'text_input', datatype: 'BYTES', shape: [1], data: ['hi'] },
      { name: 'ids', datatype: 'INT64', shape: [2, 2], data: [1n, 2n, 3n, 4n] },
    ]);
    expect(request.parameters).toEqual({ stream: true, temperature: 0.5 });
    expect(request.priority).toBe(2);
  });

  it('gives a batching model a batch dimension of 1', () => {
    expect(decodeGenerateRequest(body('{"text_input":"hi"}'), info(8)).inputs[0].shape).toEqual([1, 1]);
  });

  it.each([
    ['not JSON', '{', 'SF_ERR_BODY_INVALID_JSON'],
    ['not an object', '[1]', 'The generate request must be a JSON object, got [1].'],
    ['a non-string id', '{"id":3}', "Unable to parse 'id': expected a string, got 3."],
    ['an object parameter', '{"extra":{"a":1}}', '\'extra\' is not an input of model \'llm\', and as a parameter it must be a string, number or boolean, got {"a":1}.'],
    ['bad parameters', '{"parameters":[1]}', "Unable to parse 'parameters': expected an object of string, number or boolean values, got [1]."],
    ['a ragged array', '{"ids":[[1,2],[3]]}', "Tensor 'ids': a nested array must be rectangular: every element at one depth of the same length."],
    ['a value of the wrong type', '{"ids":[["a","b"]]}', 'SF_ERR_TENSOR_DATA'],
  ])('400 for %s', (_what, json, expected) => {
    const caught = thrown(() => decodeGenerateRequest(body(json), info(0)));
    expect(caught.statusCode).toBe(400);
    expect(expected.startsWith('SF_ERR_') ? caught.code : caught.message).toBe(expected);
  });
});

describe('encodeGenerateResponse', () => {
  it('writes one field per output: a single element as a value, more as a flat array', () => {
    const response = {
      modelName: 'llm', modelVersion: '1',
      outputs: [
        createTensor('text_output', 'BYTES', [1, 1], ['hello']),
        createTensor('scores', 'INT64', [2, 2], [1n, 2n, 3n, 9007199254740993n]),
      ],
    };
    expect(encodeGenerateResponse(response, 'r1')).toEqual({ id: 'r1', model_name: 'llm', model_version: '1', text_output: 'hello', scores: [1n, 2n, 3n, 9007199254740993n] });
    expect(encodeGenerateResponse(response)).not.toHaveProperty('id');
  });
});
