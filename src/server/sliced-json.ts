import { setImmediate as nextTurn } from 'node:timers/promises';
import type { FastifyInstance } from 'fastify';

/**
 * How much JSON text is written between two turns of the event loop. A 1024-wide float row is
 * ~20 KB of JSON and ~0.15–0.3 ms of formatting on a 2-vCPU machine, so a slice of 64 KB holds the
 * HTTP thread for about a millisecond, and a health probe waits no longer than that.
 */
const SLICE_BYTES = 64 * 1024;

/** A JSON answer already written to bytes; the text routes' serializer sends it as it is. */
export class JsonBytes {
  constructor(readonly bytes: Buffer) {}
}

/**
 * The pieces of `JSON.stringify(value)`, in order: containers are walked here and every leaf (a
 * string, a number, a row of numbers, anything that is not a plain array or object) is written by
 * JSON.stringify itself, so numbers are formatted exactly as JSON.stringify formats them. The walk
 * follows JSON.stringify's rules for what it reaches: object keys in Object.keys order, undefined,
 * functions and symbols left out of objects and written `null` in arrays, objects with `toJSON`
 * handed over whole.
 */
function* jsonPieces(value: unknown): Generator<string> {
  if (Array.isArray(value)) {
    const first: unknown = value[0];
    // A row of scalars is one leaf: JSON.stringify writes it faster than a walk would.
    if (typeof first !== 'object' || first === null) {
      yield JSON.stringify(value);
      return;
    }
    yield '[';
    for (let i = 0; i < value.length; i++) {
      if (i > 0) yield ',';
      if (isOmitted(value[i])) yield 'null';
      else yield* jsonPieces(value[i]);
    }
    yield ']';
    return;
  }
  if (isPlainObject(value)) {
    yield '{';
    let first = true;
    for (const key of Object.keys(value)) {
      const member = value[key];
      if (isOmitted(member)) continue;
      yield `${first ? '' : ','}${JSON.stringify(key)}:`;
      first = false;
      yield* jsonPieces(member);
    }
    yield '}';
    return;
  }
  yield JSON.stringify(value) ?? 'null';
}

function isOmitted(value: unknown): boolean {
  return value === undefined || typeof value === 'function' || typeof value === 'symbol';
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  if (typeof value !== 'object' || value === null) return false;
  const proto: unknown = Object.getPrototypeOf(value);
  return (proto === Object.prototype || proto === null) && typeof (value as { toJSON?: unknown }).toJSON !== 'function';
}

/**
 * `JSON.stringify(value)` as UTF-8 bytes, byte for byte, written a slice at a time with a turn of
 * the event loop between slices: a 32 × 1024 embedding answer (660 KB) costs 9–17 ms of
 * JSON.stringify in one go, during which health probes and every other route would wait. The answer
 * is still sent as one body with its Content-Length, as TEI (axum's `Json`) and vLLM send theirs,
 * rather than as a chunked stream.
 */
export async function slicedJson(value: unknown): Promise<Buffer> {
  const slices: Buffer[] = [];
  let pending: string[] = [];
  let pendingLength = 0;
  for (const piece of jsonPieces(value)) {
    pending.push(piece);
    pendingLength += piece.length;
    if (pendingLength >= SLICE_BYTES) {
      slices.push(Buffer.from(pending.join('')));
      pending = [];
      pendingLength = 0;
      await nextTurn();
    }
  }
  slices.push(Buffer.from(pending.join('')));
  return slices.length === 1 ? slices[0] : Buffer.concat(slices);
}

/**
 * Makes a route plugin's JSON answers leave the HTTP thread free while they are written (see
 * {@link slicedJson}): a preSerialization hook writes the answer in slices and the plugin's
 * serializer sends those bytes. Small answers fit one slice and are written in one go as before.
 * Error answers the plugin's error handler sends go through the same serializer.
 */
export function sendJsonInSlices(app: FastifyInstance): void {
  app.addHook('preSerialization', async (_request, _reply, payload) => new JsonBytes(await slicedJson(payload)));
  // fastify sends a Buffer from the serializer as it is, with its Content-Length.
  app.setSerializerCompiler(() => (data) => (data instanceof JsonBytes ? (data.bytes as unknown as string) : JSON.stringify(data)));
}
