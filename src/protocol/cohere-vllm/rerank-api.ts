import { randomUUID } from 'node:crypto';
import type { TextAnswer } from '../../text/text-engine.js';
import { FieldError, optionalBoolean, optionalInteger, optionalString, requiredString, type Body } from '../openai/openai-fields.js';

/**
 * The rerank API that Cohere (docs.cohere.com/reference/rerank, v1 and v2), Jina
 * (jina.ai/reranker, POST /v1/rerank) and vLLM (/v1/rerank, /v2/rerank) share: `model`, `query`,
 * `documents`, `top_n`, `return_documents`. Where they differ, one rule is served:
 * - documents: strings, or objects with a `text` string (Cohere v1 and Jina); objects are ranked by
 *   their `text`, Cohere v1's default rank field.
 * - top_n: absent or 0 means every document (vLLM's 0 default; Cohere and Jina leave it out).
 * - return_documents: defaults to true, as Jina documents and vLLM always does; Cohere v1 defaults
 *   to false, and its SDK reads `document` as optional either way. Cohere v2 has no such field and
 *   its SDK ignores a `document` it does not expect (the client parses with skipValidation).
 */
export interface RerankRequest {
  readonly model?: string;
  readonly query: string;
  /** The text each document is ranked by. */
  readonly texts: string[];
  /** What `document` answers for each: the object given, or `{text}` for a string. */
  readonly documents: object[];
  readonly topN?: number;
  readonly returnDocuments: boolean;
}

function readDocuments(value: unknown): { texts: string[]; documents: object[] } {
  if (!Array.isArray(value)) throw new FieldError('documents', '`documents` must be an array of strings or of objects with a `text` string');
  const texts: string[] = [];
  const documents: object[] = [];
  value.forEach((item: unknown, i) => {
    if (typeof item === 'string') {
      texts.push(item);
      documents.push({ text: item });
      return;
    }
    const text = typeof item === 'object' && item !== null ? (item as { text?: unknown }).text : undefined;
    if (typeof text !== 'string') throw new FieldError('documents', `\`documents[${i}]\` must be a string or an object with a \`text\` string`);
    texts.push(text);
    documents.push(item as object);
  });
  return { texts, documents };
}

export function readRerankRequest(body: Body): RerankRequest {
  const query = requiredString(body, 'query');
  if (!('documents' in body)) throw new FieldError('documents', '`documents` is required');
  const { texts, documents } = readDocuments(body.documents);
  return {
    model: optionalString(body, 'model'),
    query,
    texts,
    documents,
    topN: optionalInteger(body, 'top_n', 0) || undefined,
    returnDocuments: optionalBoolean(body, 'return_documents') ?? true,
  };
}

/**
 * Results sorted by relevance, best first, cut to top_n. The envelope carries what each client
 * reads: `id` and `meta` (Cohere's RerankResponse / V2RerankResponse; `meta.tokens` is its ApiMeta
 * token count), `usage` (Jina's `{total_tokens}`, vLLM's RerankUsage `{prompt_tokens, total_tokens}`)
 * and `model` (vLLM, Jina).
 */
export function rerankResponse(request: RerankRequest, answer: TextAnswer<number>, model: string, apiVersion: '1' | '2') {
  const ranked = answer.values.map((score, index) => ({ index, score })).sort((a, b) => b.score - a.score);
  const kept = request.topN === undefined ? ranked : ranked.slice(0, request.topN);
  return {
    id: randomUUID(),
    model,
    results: kept.map(({ index, score }) => ({
      index,
      relevance_score: score,
      ...(request.returnDocuments ? { document: request.documents[index] } : {}),
    })),
    usage: { prompt_tokens: answer.promptTokens, total_tokens: answer.promptTokens },
    meta: { api_version: { version: apiVersion }, tokens: { input_tokens: answer.promptTokens } },
  };
}
