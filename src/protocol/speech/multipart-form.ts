import type { FastifyRequest } from 'fastify';
import { createError } from '../../errors/index.js';

/** A multipart form read whole: its one file, and its fields (repeated ones, as `x[]`, kept in order). */
export interface MultipartForm {
  readonly file?: { readonly field: string; readonly filename: string; readonly bytes: Uint8Array };
  readonly fields: ReadonlyMap<string, readonly string[]>;
}

/** Reads the request's multipart body; a body that is not multipart/form-data is a 400 saying so. */
export async function readMultipartForm(request: FastifyRequest, fileField: string | undefined): Promise<MultipartForm> {
  if (!request.isMultipart()) throw createError('SF_ERR_BAD_REQUEST', 'send the audio as multipart/form-data');
  let file: MultipartForm['file'];
  const fields = new Map<string, string[]>();
  for await (const part of request.parts()) {
    if (part.type === 'file') {
      const bytes = await part.toBuffer();
      if ((fileField === undefined || part.fieldname === fileField) && file === undefined) file = { field: part.fieldname, filename: part.filename, bytes };
    } else {
      fields.set(part.fieldname, [...(fields.get(part.fieldname) ?? []), String(part.value)]);
    }
  }
  return { file, fields };
}
