import { ValidateBy, type ValidationOptions } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';

/** A file from a `multipart/form-data` request (FastAPI's UploadFile). */
export interface UploadedFile {
  readonly filename: string;
  readonly mimetype: string;
  readonly encoding: string;
  readonly data: Buffer;
}

export function isUploadedFile(value: unknown): value is UploadedFile {
  const v = value as UploadedFile | null;
  return typeof v === 'object' && v !== null && typeof v.filename === 'string' && v.data instanceof Uint8Array;
}

/** The constraint name of {@link IsFile}, the `type` of its 422 issues. */
export const IS_FILE = 'isFile';

export interface IsFileOptions {
  /** Largest accepted file, in bytes. */
  readonly maxSize?: number;
  /** Accepted MIME types, e.g. `['image/png', 'image/jpeg']`. */
  readonly mimeTypes?: readonly string[];
}

/**
 * Declares a DTO property as an uploaded file. class-validator has no file rule and
 * class-validator-jsonschema no binary format, so this joins the two: the check, and
 * `{type: string, format: binary}` in OpenAPI, which makes Swagger UI offer a file picker.
 */
export function IsFile(options: IsFileOptions = {}, validation?: ValidationOptions): PropertyDecorator {
  const check = ValidateBy(
    {
      name: IS_FILE,
      validator: {
        validate: (value: unknown) =>
          isUploadedFile(value) &&
          (options.maxSize === undefined || value.data.byteLength <= options.maxSize) &&
          (options.mimeTypes === undefined || options.mimeTypes.includes(value.mimetype)),
        defaultMessage: (args) => {
          const parts = [`${args?.property ?? 'value'} must be an uploaded file`];
          if (options.maxSize !== undefined) parts.push(`of at most ${options.maxSize} bytes`);
          if (options.mimeTypes) parts.push(`of type ${options.mimeTypes.join(', ')}`);
          return parts.join(' ');
        },
      },
    },
    validation,
  );
  // A function replaces the generated schema instead of merging into it: the generated one holds a
  // `$ref` to the interface's `Object` type, and a `$ref` hides its siblings in OpenAPI 3.0.
  const schema = JSONSchema(() => ({ type: 'string', format: 'binary' }));
  return (target, key) => {
    check(target, key);
    schema(target, key as string);
  };
}
