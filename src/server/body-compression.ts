import { promisify } from 'node:util';
import { deflate, gunzip, gzip, inflate, type ZlibOptions } from 'node:zlib';
import negotiate from '@fastify/accept-negotiator';
import type { FastifyRequest } from 'fastify';
import { createError } from '../errors/index.js';

/** The content codings Triton accepts on infer requests and uses on responses (http_server.cc ~2527-2549). */
export type ContentCoding = 'gzip' | 'deflate';

/**
 * What an unsupported Content-Encoding is answered with: 415 with the codings accepted in the
 * `Accept-Encoding` response header (RFC 9110 §15.5.16 and §12.5.3); error-handler.ts sets it.
 */
export const SUPPORTED_CONTENT_CODINGS = 'gzip, deflate';

const decompressors: Readonly<Record<ContentCoding, (buf: Buffer, options: ZlibOptions) => Promise<Buffer>>> = {
  gzip: promisify(gunzip),
  // HTTP's "deflate" is the zlib format (RFC 9110 §8.4.1.2), which zlib's inflate reads.
  deflate: promisify(inflate),
};

const compressors: Readonly<Record<ContentCoding, (buf: Buffer) => Promise<Buffer>>> = {
  gzip: promisify(gzip),
  deflate: promisify(deflate),
};

/**
 * Undoes the request's `Content-Encoding`. The limit applies to the decompressed size too, so a
 * small compressed body cannot expand past the body limit.
 */
export async function decompressRequestBody(body: Buffer, contentEncoding: string | undefined, limit: number): Promise<Buffer> {
  const coding = (contentEncoding ?? '').trim().toLowerCase();
  if (coding === '' || coding === 'identity') return body;
  if (coding !== 'gzip' && coding !== 'deflate') throw createError('SF_ERR_CONTENT_ENCODING_UNSUPPORTED', coding);
  try {
    return await decompressors[coding](body, { maxOutputLength: limit });
  } catch (err) {
    if ((err as { code?: string }).code === 'ERR_BUFFER_TOO_LARGE') throw createError('SF_ERR_BODY_TOO_LARGE', limit);
    throw createError('SF_ERR_BAD_REQUEST', `Request body could not be decompressed as ${coding}: ${(err as Error).message}`);
  }
}

const EMPTY = Buffer.alloc(0);

/** The decompressed body of a protocol request (a Buffer from the /v2 scope's content-type parser). */
export function readRequestBody(request: FastifyRequest, limit: number): Promise<Buffer> {
  const coding = request.headers['content-encoding'];
  return decompressRequestBody((request.body as Buffer | undefined) ?? EMPTY, Array.isArray(coding) ? coding[0] : coding, limit);
}

/** The coding to compress a response with, from `Accept-Encoding`; undefined = send it as is. */
export function negotiateResponseCoding(acceptEncoding: string | undefined): ContentCoding | undefined {
  if (!acceptEncoding) return undefined;
  const chosen = negotiate(acceptEncoding, ['gzip', 'deflate', 'identity']);
  return chosen === 'gzip' || chosen === 'deflate' ? chosen : undefined;
}

export function compressBody(body: Buffer, coding: ContentCoding): Promise<Buffer> {
  return compressors[coding](body);
}
