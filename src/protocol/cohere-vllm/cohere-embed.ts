import { randomUUID } from 'node:crypto';
import type { EmbedOptions, TextAnswer, TextEngine } from '../../text/text-engine.js';
import { float32Base64 } from '../openai/openai-embeddings.js';
import { numberList } from '../text-routes.js';
import { FieldError, optionalInteger, optionalString, type Body } from '../openai/openai-fields.js';

/**
 * Cohere's v2 embed API (docs.cohere.com/reference/embed) as vLLM serves it for any embedding model
 * (vllm/entrypoints/pooling/embed/cohere/): texts only, `input_type` as a prompt name, the
 * embedding types vLLM computes (float, binary, ubinary, base64), `output_dimension` as Matryoshka
 * dimensions, `truncate` END / START / NONE.
 */
const EMBEDDING_TYPES = ['float', 'binary', 'ubinary', 'base64'] as const;
type EmbeddingType = (typeof EMBEDDING_TYPES)[number];

const TRUNCATION: Readonly<Record<string, Pick<EmbedOptions, 'truncate' | 'truncationDirection'>>> = {
  END: { truncate: true, truncationDirection: 'right' },
  START: { truncate: true, truncationDirection: 'left' },
  NONE: { truncate: false },
};

export interface CohereEmbedRequest {
  readonly model?: string;
  readonly texts: string[];
  readonly inputType?: string;
  readonly embeddingTypes: EmbeddingType[];
  readonly options: EmbedOptions;
}

function readTexts(body: Body): string[] {
  if (body.images != null || body.inputs != null) throw new FieldError(body.images != null ? 'images' : 'inputs', 'Only `texts` can be embedded here: serve-fn serves text models');
  const { texts } = body;
  if (!Array.isArray(texts) || !texts.every((text) => typeof text === 'string')) throw new FieldError('texts', '`texts` must be an array of strings');
  return texts;
}

function readEmbeddingTypes(body: Body): EmbeddingType[] {
  const value = body.embedding_types;
  if (value === undefined || value === null) return ['float'];
  if (!Array.isArray(value) || value.length === 0 || !value.every((type) => EMBEDDING_TYPES.includes(type))) {
    throw new FieldError('embedding_types', `\`embedding_types\` must be a non-empty list of ${EMBEDDING_TYPES.join(', ')}`);
  }
  return value;
}

export function readCohereEmbedRequest(body: Body): CohereEmbedRequest {
  const texts = readTexts(body);
  const truncate = optionalString(body, 'truncate') ?? 'END';
  if (!Object.hasOwn(TRUNCATION, truncate)) throw new FieldError('truncate', '`truncate` must be "END", "START" or "NONE"');
  // vLLM's max_tokens cuts to fewer tokens than the model takes; the engine cuts only at the model's limit.
  if (body.max_tokens != null) throw new FieldError('max_tokens', '`max_tokens` is not supported: texts are cut at the model\'s input limit (`truncate`)');
  return {
    model: optionalString(body, 'model'),
    texts,
    inputType: optionalString(body, 'input_type'),
    embeddingTypes: readEmbeddingTypes(body),
    options: { ...TRUNCATION[truncate], dimensions: optionalInteger(body, 'output_dimension', 1) },
  };
}

/**
 * `input_type` picks the model's prompt of that name (config_sentence_transformers.json), as vLLM
 * does; an unknown one is refused by the engine, naming the prompts there are. Unlike vLLM, a model
 * with no prompts at all takes any `input_type` and embeds the texts as they are: the cohere-ai v2
 * SDK always sends one, so refusing it would leave such models unusable from Cohere's own client.
 */
export function promptName(model: TextEngine, inputType: string | undefined): string | undefined {
  return Object.keys(model.info.prompts).length === 0 ? undefined : inputType;
}

/** vLLM's bit packing: one bit per value (1 for >= 0), eight values a byte, first value in the high bit; `binary` is the byte minus 128. */
function packBits(vector: Float32Array, signed: boolean): number[] {
  if (vector.length % 8 !== 0) throw new FieldError('embedding_types', `Binary embedding types need a width that is a multiple of 8; this model's is ${vector.length}`);
  return Array.from({ length: vector.length / 8 }, (_, byte) => {
    let value = 0;
    for (let bit = 0; bit < 8; bit++) if (vector[byte * 8 + bit] >= 0) value |= 1 << (7 - bit);
    return signed ? value - 128 : value;
  });
}

const ENCODERS: Readonly<Record<EmbeddingType, (vector: Float32Array) => number[] | string>> = {
  float: numberList,
  binary: (vector) => packBits(vector, true),
  ubinary: (vector) => packBits(vector, false),
  base64: float32Base64,
};

/** Cohere's EmbedByTypeResponse: one list per asked type, the texts echoed, the token count in `meta`. */
export function cohereEmbedResponse(request: CohereEmbedRequest, answer: TextAnswer<Float32Array>) {
  return {
    id: `embd-${randomUUID()}`,
    embeddings: Object.fromEntries(request.embeddingTypes.map((type) => [type, answer.values.map(ENCODERS[type])])),
    texts: request.texts,
    meta: { api_version: { version: '2' }, tokens: { input_tokens: answer.promptTokens } },
  };
}
