import 'reflect-metadata';
import { getMetadataStorage, IsOptional, IsString, validate } from 'class-validator';
import { validationMetadatasToSchemas } from 'class-validator-jsonschema';
import { describe, expect, it } from 'vitest';
import { IsFile, isUploadedFile, type UploadedFile } from '../../src/validation/uploaded-file.js';

class PhotoUpload {
  @IsFile({ maxSize: 4, mimeTypes: ['image/png', 'image/jpeg'] }) photo!: UploadedFile;
  @IsOptional() @IsFile() attachment?: UploadedFile;
  @IsString() caption!: string;
}

class AnyUpload {
  @IsFile({}, { message: 'send a file in field "doc"' }) doc!: UploadedFile;
}

function file(bytes: number, mimetype = 'image/png'): UploadedFile {
  return { filename: 'a.png', mimetype, encoding: '7bit', data: Buffer.alloc(bytes, 1) };
}

async function failures(value: object): Promise<Record<string, Record<string, string>>> {
  const errors = await validate(value);
  return Object.fromEntries(errors.map((e) => [e.property, e.constraints ?? {}]));
}

describe('isUploadedFile', () => {
  it('accepts a filename with Buffer or Uint8Array data', () => {
    expect(isUploadedFile(file(1))).toBe(true);
    expect(isUploadedFile({ filename: 'x', mimetype: 'a/b', encoding: '7bit', data: new Uint8Array(2) })).toBe(true);
  });

  it.each([
    ['null', null],
    ['a string', 'a.png'],
    ['an object without data', { filename: 'a.png' }],
    ['data that is not bytes', { filename: 'a.png', data: 'abc' }],
    ['a missing filename', { data: Buffer.alloc(1) }],
  ])('rejects %s', (_, value) => {
    expect(isUploadedFile(value)).toBe(false);
  });
});

describe('@IsFile', () => {
  it('passes a file within the size limit and of an accepted type', async () => {
    expect(await failures(Object.assign(new PhotoUpload(), { photo: file(4), caption: 'c' }))).toEqual({});
    expect(await failures(Object.assign(new PhotoUpload(), { photo: file(1, 'image/jpeg'), caption: 'c' }))).toEqual({});
  });

  it('rejects a file larger than maxSize, a wrong MIME type and a non-file, with a message stating both limits', async () => {
    const message = 'photo must be an uploaded file of at most 4 bytes of type image/png, image/jpeg';
    expect(await failures(Object.assign(new PhotoUpload(), { photo: file(5), caption: 'c' }))).toEqual({ photo: { isFile: message } });
    expect(await failures(Object.assign(new PhotoUpload(), { photo: file(1, 'image/gif'), caption: 'c' }))).toEqual({ photo: { isFile: message } });
    expect(await failures(Object.assign(new PhotoUpload(), { photo: 'a.png', caption: 'c' }))).toEqual({ photo: { isFile: message } });
  });

  it('without limits, accepts any file and says only that a file is expected', async () => {
    const ok = Object.assign(new PhotoUpload(), { photo: file(1), attachment: file(1000, 'application/pdf'), caption: 'c' });
    expect(await failures(ok)).toEqual({});
    const bad = Object.assign(new PhotoUpload(), { photo: file(1), attachment: 'nope', caption: 'c' });
    expect(await failures(bad)).toEqual({ attachment: { isFile: 'attachment must be an uploaded file' } });
  });

  it('uses a custom class-validator message', async () => {
    expect(await failures(Object.assign(new AnyUpload(), { doc: 5 }))).toEqual({ doc: { isFile: 'send a file in field "doc"' } });
  });

  it('documents the property as a binary string, which Swagger UI shows as a file picker', () => {
    const schemas = validationMetadatasToSchemas({ classValidatorMetadataStorage: getMetadataStorage() });
    expect(schemas.PhotoUpload).toEqual({
      type: 'object',
      properties: {
        photo: { type: 'string', format: 'binary' },
        attachment: { type: 'string', format: 'binary' },
        caption: { type: 'string' },
      },
      required: ['photo', 'caption'],
    });
  });
});
