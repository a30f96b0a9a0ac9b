import { IsArray, IsInt, IsNumber, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { IsFile, type UploadedFile } from 'serve-fn';
import { MAX_CROP_WIDTH } from './line-crop.js';

const IMAGE_TYPES = ['image/png', 'image/jpeg', 'image/webp', 'image/tiff', 'image/gif'];
const MAX_IMAGE_BYTES = 20 * 1024 * 1024;

export class OcrUpload {
  @IsFile({ mimeTypes: IMAGE_TYPES, maxSize: MAX_IMAGE_BYTES })
  image!: UploadedFile;
}

export class OcrBase64Request {
  @JSONSchema({ description: 'The image as base64, or as a data:image/...;base64, URL.' })
  @IsString() @MinLength(1) @MaxLength(Math.ceil((MAX_IMAGE_BYTES * 4) / 3) + 64)
  image!: string;
}

export class OcrLineDto {
  @IsString() text!: string;
  @JSONSchema({ description: 'Recognition confidence, 0 to 1.' })
  @IsNumber() score!: number;
  @JSONSchema({ description: 'Detection confidence, 0 to 1.' })
  @IsNumber() box_score!: number;
  @JSONSchema({
    description: 'Corners [x, y] in image pixels, clockwise from the top-left.',
    type: 'array',
    items: { type: 'array', items: { type: 'number' }, minItems: 2, maxItems: 2 },
    minItems: 4,
    maxItems: 4,
  })
  @IsArray() box!: number[][];
}

export class OcrResponse {
  @IsInt() width!: number;
  @IsInt() height!: number;
  // A function replaces the generated schema: serve-fn builds schemas without class-transformer's
  // @Type records, so an array of DTOs would otherwise reference a schema named 'Array'.
  @JSONSchema(() => ({ type: 'array', description: 'Text lines in reading order.', items: { $ref: '#/components/schemas/OcrLineDto' } }))
  @IsArray() lines!: OcrLineDto[];
}

/** One text line for the recogniser: raw 8-bit RGB bytes, `height` rows of `width` pixels. */
export class TextLineCrop {
  @IsInt() @Min(1) @Max(MAX_CROP_WIDTH) width!: number;
  @IsInt() @Min(1) @Max(1024) height!: number;
  @JSONSchema({ description: 'width x height x 3 bytes of interleaved RGB, rows top to bottom.' })
  @IsFile({ maxSize: MAX_CROP_WIDTH * 1024 * 3 })
  pixels!: UploadedFile;
}

export class RecognizedLine {
  @IsString() text!: string;
  @IsNumber() score!: number;
}
