import { parseTextInputs, type TextInput } from '../../text/text-inputs.js';
import type { TextAnswer } from '../../text/text-engine.js';
import { numberList } from '../text-routes.js';
import { aboutField, FieldError, optionalInteger, optionalString, type Body } from './openai-fields.js';

/** OpenAI's embeddings request (API reference, "Create embeddings"), as read from the body. */
export interface EmbeddingsRequest {
  readonly inputs: TextInput[];
  readonly model?: string;
  readonly encodingFormat: 'float' | 'base64';
  readonly dimensions?: number;
}

/**
 * `encoding_format` absent means float (OpenAI's default). An explicit `null` is refused, as both
 * upstream servers do: TEI's `encoding_format: EncodingFormat` with `#[serde(default)]`
 * (router/src/http/types.rs) fills in only a missing field, and vLLM's pydantic
 * `encoding_format: EncodingFormat = "float"` (vllm/entrypoints/pooling/base/protocol.py) accepts no
 * None. The official SDKs never send null: openai-node replaces a falsy format with base64.
 */
function encodingFormat(body: Body): 'float' | 'base64' {
  if (!('encoding_format' in body)) return 'float';
  const value = body.encoding_format;
  if (value !== 'float' && value !== 'base64') throw new FieldError('encoding_format', `\`encoding_format\` must be "float" or "base64", got ${JSON.stringify(value)}`);
  return value;
}

export function readEmbeddingsRequest(body: Body): EmbeddingsRequest {
  // OpenAI refuses an empty string ("'$.input' is invalid"), unlike TEI.
  const inputs = aboutField('input', () => parseTextInputs(body.input, { field: 'input', allowEmptyString: false }));
  // `user` is accepted and ignored: it is OpenAI's end-user id for abuse monitoring.
  optionalString(body, 'user');
  return { inputs, model: optionalString(body, 'model'), encodingFormat: encodingFormat(body), dimensions: optionalInteger(body, 'dimensions', 1) };
}

/**
 * The float32 values as little-endian bytes in base64, what openai-node's toFloat32Array and
 * openai-python's `np.frombuffer(..., dtype="float32")` decode. Written through a DataView so the
 * byte order is little-endian on any host.
 */
export function float32Base64(vector: Float32Array): string {
  const bytes = Buffer.alloc(vector.length * 4);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  vector.forEach((value, i) => view.setFloat32(i * 4, value, true));
  return bytes.toString('base64');
}

/** OpenAI's CreateEmbeddingResponse; `prompt_tokens` counts the special tokens the model saw. */
export function embeddingsResponse(answer: TextAnswer<Float32Array>, model: string, format: 'float' | 'base64') {
  return {
    object: 'list' as const,
    data: answer.values.map((vector, index) => ({
      object: 'embedding' as const,
      embedding: format === 'base64' ? float32Base64(vector) : numberList(vector),
      index,
    })),
    model,
    usage: { prompt_tokens: answer.promptTokens, total_tokens: answer.promptTokens },
  };
}
