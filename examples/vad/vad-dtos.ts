import { IsArray, IsInt, IsNumber, IsOptional, Max, Min } from 'class-validator';
import { JSONSchema } from 'class-validator-jsonschema';
import { IsFile, type UploadedFile } from 'serve-fn';

// Untyped uploads are accepted too: curl and many clients send .wav files as application/octet-stream,
// and the decoder checks the content anyway.
const WAV_TYPES = ['audio/wav', 'audio/x-wav', 'audio/wave', 'audio/vnd.wave', 'application/octet-stream'];

/** A WAV upload and get_speech_timestamps' settings, as multipart form fields. */
export class VadRequest {
  @IsFile({ mimeTypes: WAV_TYPES, maxSize: 64 * 1024 * 1024 })
  audio!: UploadedFile;

  @JSONSchema({ description: 'Speech probability that opens a segment (default 0.5).' })
  @IsOptional() @IsNumber() @Min(0.05) @Max(0.95)
  threshold?: number;

  @JSONSchema({ description: 'Silence that ends a segment, ms (default 100).' })
  @IsOptional() @IsInt() @Min(0) @Max(10_000)
  min_silence_ms?: number;

  @JSONSchema({ description: 'Shortest speech kept, ms (default 250).' })
  @IsOptional() @IsInt() @Min(0) @Max(10_000)
  min_speech_ms?: number;

  @JSONSchema({ description: 'Padding added around each segment, ms (default 30).' })
  @IsOptional() @IsInt() @Min(0) @Max(2_000)
  speech_pad_ms?: number;
}

export class SpeechSegmentDto {
  @IsInt() start_ms!: number;
  @IsInt() end_ms!: number;
}

export class VadResponse {
  @JSONSchema({ description: 'Length of the recording, ms.' })
  @IsInt() duration_ms!: number;
  // A function replaces the generated schema: serve-fn builds schemas without class-transformer's
  // @Type records, so an array of DTOs would otherwise reference a schema named 'Array'.
  @JSONSchema(() => ({ type: 'array', description: 'Speech segments in time order.', items: { $ref: '#/components/schemas/SpeechSegmentDto' } }))
  @IsArray() segments!: SpeechSegmentDto[];
}
