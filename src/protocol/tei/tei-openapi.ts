import type { FastifySchema } from 'fastify';

/**
 * OpenAPI documents of the TEI routes, after TEI's own docs/openapi.json (huggingface/text-embeddings-inference).
 * They document only: the routes read their bodies with tei-fields.ts, since TEI's untagged inputs
 * are not something a JSON schema validator can tell apart.
 */
export const TEI_TAG = 'Text Embeddings Inference';

type Schema = Record<string, unknown>;

const errorBody = (description: string, error: string, errorType: string): Schema => ({
  description,
  content: {
    'application/json': {
      schema: {
        type: 'object',
        required: ['error', 'error_type'],
        properties: { error: { type: 'string' }, error_type: { type: 'string', enum: ['Unhealthy', 'Backend', 'Overloaded', 'Validation', 'Tokenizer', 'Empty'] } },
      },
      example: { error, error_type: errorType },
    },
  },
});

const INFERENCE_ERRORS: Schema = {
  400: errorBody('Batch is empty', 'Input validation error: `inputs` cannot be empty', 'Empty'),
  413: errorBody('Batch size error: more inputs than `max_client_batch_size`', 'batch size 33 > maximum allowed batch size 32', 'Validation'),
  422: errorBody('Validation error (a field of the wrong type, an input too long without truncation) or tokenization error', 'Input validation error: `inputs` must have less than 512 tokens. Given: 600', 'Validation'),
  424: errorBody('Backend error: the model cannot do this task, or its forward pass failed', "model 'bge-small' is not a re-ranker model", 'Backend'),
  429: errorBody('Model is overloaded', 'Model is overloaded', 'Overloaded'),
};

const TOKENIZER_ERRORS: Schema = {
  400: INFERENCE_ERRORS[400],
  413: INFERENCE_ERRORS[413],
  422: errorBody('Validation or tokenization error', 'Input validation error: `ids[0]` must be a token id (an integer from 0 to 4294967295), got -1', 'Validation'),
};

const text = { type: 'string' };
const ids = { type: 'array', items: { type: 'integer', minimum: 0 } };
const input = { oneOf: [text, ids, { type: 'array', items: { oneOf: [text, ids] } }], description: 'One text, one list of token ids, or a batch mixing both', example: 'What is Deep Learning?' };
const nullableBoolean = (description: string): Schema => ({ type: 'boolean', nullable: true, description });
const truncation: Schema = {
  truncate: nullableBoolean('Cut inputs longer than `max_input_length` instead of refusing them; the server\'s `auto_truncate` when unset'),
  truncation_direction: { type: 'string', enum: ['Left', 'Right', 'left', 'right'], default: 'Right' },
};
const promptName = { type: 'string', nullable: true, description: 'A key of the model\'s sentence-transformers `prompts`; its prompt is put before every text' };
const model = { type: 'string', nullable: true, description: 'serve-fn extension: which served model answers, where several are served' };
const vectors = { type: 'array', items: { type: 'array', items: { type: 'number' } } };
const sparse = { type: 'array', items: { type: 'array', items: { type: 'object', properties: { index: { type: 'integer' }, value: { type: 'number' } } } } };
const prediction = { type: 'object', properties: { score: { type: 'number' }, label: { type: 'string' } } };

function route(summary: string, body: Schema, response: Schema, errors: Schema = INFERENCE_ERRORS): FastifySchema {
  return { tags: [TEI_TAG], summary, body, response: { 200: { description: 'Successful Response', ...response }, ...errors } } as FastifySchema;
}

const object = (required: string[], properties: Schema): Schema => ({ type: 'object', required, properties: { ...properties, model } });

export const TEI_SCHEMAS = {
  embed: route(
    'Embeddings: one pooled vector per input',
    object(['inputs'], { inputs: input, ...truncation, prompt_name: promptName, normalize: { type: 'boolean', default: true }, dimensions: { type: 'integer', minimum: 1, nullable: true, description: 'Keep the first N dimensions (Matryoshka), before normalising' } }),
    vectors,
  ),
  embedAll: route('Token embeddings: one vector per token of each input, without pooling', object(['inputs'], { inputs: input, ...truncation, prompt_name: promptName }), { type: 'array', items: vectors }),
  embedSparse: route('Sparse (SPLADE) embeddings: the non-zero vocabulary weights of each input', object(['inputs'], { inputs: input, ...truncation, prompt_name: promptName }), sparse),
  predict: route(
    'Classification: the labels of each text or text pair, best first',
    object(['inputs'], {
      inputs: {
        description: 'A string, a pair of strings [string, string], or a batch of mixed single strings and pairs [[string], [string, string], ...]',
        oneOf: [text, { type: 'array', items: text, minItems: 1, maxItems: 2 }, { type: 'array', items: { type: 'array', items: text, minItems: 1, maxItems: 2 } }],
      },
      ...truncation,
      raw_scores: { type: 'boolean', default: false, description: 'Logits as they are, instead of softmax (sigmoid for one label)' },
    }),
    { oneOf: [{ type: 'array', items: prediction }, { type: 'array', items: { type: 'array', items: prediction } }] },
  ),
  rerank: route(
    'Re-ranking: each text scored against the query, best first',
    object(['query', 'texts'], { query: text, texts: { type: 'array', items: text }, ...truncation, raw_scores: { type: 'boolean', default: false }, return_text: { type: 'boolean', default: false } }),
    { type: 'array', items: { type: 'object', properties: { index: { type: 'integer' }, text: text, score: { type: 'number' } } } },
  ),
  similarity: route(
    'Sentence similarity: the cosine of the source sentence with each sentence',
    object(['inputs'], {
      inputs: { type: 'object', required: ['source_sentence', 'sentences'], properties: { source_sentence: text, sentences: { type: 'array', items: text } } },
      parameters: { type: 'object', nullable: true, properties: { ...truncation, prompt_name: promptName } },
    }),
    { type: 'array', items: { type: 'number' } },
  ),
  tokenize: route(
    'Tokenization: the tokens of each text, with UTF-8 byte offsets into it',
    object(['inputs'], { inputs: { oneOf: [text, { type: 'array', items: text }] }, add_special_tokens: { type: 'boolean', default: true }, prompt_name: promptName }),
    { type: 'array', items: { type: 'array', items: { type: 'object', properties: { id: { type: 'integer' }, text, special: { type: 'boolean' }, start: { type: 'integer', nullable: true }, stop: { type: 'integer', nullable: true } } } } },
    TOKENIZER_ERRORS,
  ),
  decode: route(
    'Decoding: the text of each list of token ids',
    object(['ids'], { ids: { oneOf: [ids, { type: 'array', items: ids }] }, skip_special_tokens: { type: 'boolean', default: true } }),
    { type: 'array', items: text },
    TOKENIZER_ERRORS,
  ),
  root: route(
    "The model's own route (TEI's POST / and SageMaker's /invocations): /predict for a classifier, /rerank for a re-ranker, /embed_sparse for a SPLADE model, /embed otherwise",
    { type: 'object', description: 'The body of the route it stands for' },
    {},
  ),
  info: {
    tags: [TEI_TAG],
    summary: 'The served model and the router parameters, as TEI answers /info',
    querystring: { type: 'object', properties: { model } },
    response: { 200: { description: 'Successful Response', type: 'object' } },
  } as FastifySchema,
  health: {
    tags: [TEI_TAG],
    summary: 'TEI health check: 200 with an empty body while every text model can serve',
    response: { 200: { description: 'Everything is working fine (an empty body)' }, 503: errorBody('A text model cannot serve', 'unhealthy', 'Unhealthy') },
  } as FastifySchema,
} as const;
