import type { FastifyReply } from 'fastify';
import type { TextAnswer } from '../text/text-engine.js';
import type { TextModelSet } from '../text/text-model-set.js';

/** What the text protocols' route plugins (TEI, OpenAI, Cohere/Jina/vLLM) share: their options and the headers on every answer. */
export interface TextRoutesOptions {
  readonly models: TextModelSet;
  /** Whether a server fault's body carries its message (`serve-fn dev`); default false. */
  readonly exposeErrors?: boolean;
  /**
   * The largest request body of every text route, in bytes, compressed or inflated: TEI's
   * `--payload-limit` (docs/source/en/cli_arguments.md), {@link DEFAULT_TEXT_PAYLOAD_LIMIT} unless set.
   */
  readonly payloadLimit?: number;
}

/** TEI's `--payload-limit` default: 2,000,000 bytes. */
export const DEFAULT_TEXT_PAYLOAD_LIMIT = 2_000_000;

/** The body limit of the text routes these options serve. */
export function textPayloadLimit(opts: TextRoutesOptions): number {
  return opts.payloadLimit ?? DEFAULT_TEXT_PAYLOAD_LIMIT;
}

/**
 * The headers TEI puts on every inference answer (router/src/http/server.rs): times in ms and
 * counts, so clients and proxies written for TEI read them from serve-fn too. `x-compute-type`
 * names where the forward pass ran; TEI's constant "gpu+optimized" would be untrue on a CPU.
 */
export function setTextAnswerHeaders(reply: FastifyReply, answer: TextAnswer<unknown>, computeType: string): void {
  const { timings } = answer;
  reply.headers({
    'x-compute-type': computeType,
    'x-compute-time': String(Math.round(timings.totalMs)),
    'x-compute-characters': String(answer.characters),
    'x-compute-tokens': String(answer.promptTokens),
    'x-total-time': String(Math.round(timings.totalMs)),
    'x-tokenization-time': String(Math.round(timings.tokenizationMs)),
    'x-queue-time': String(Math.round(timings.queueMs)),
    'x-inference-time': String(Math.round(timings.inferenceMs)),
  });
}

/**
 * A pooled row as a plain list of numbers for a JSON answer. A counted loop, not `Array.from`:
 * V8's Array.from walks a typed array through the iterator protocol, which for a 32 × 1024 answer
 * cost 2–7 ms of HTTP-thread time against 0.1–0.3 ms for the loop (measured on a 2-vCPU machine).
 */
export function numberList(vector: Float32Array): number[] {
  const list = new Array<number>(vector.length);
  for (let i = 0; i < vector.length; i++) list[i] = vector[i];
  return list;
}
