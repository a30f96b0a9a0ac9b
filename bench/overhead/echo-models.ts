import { IsInt, IsString, Max, MaxLength, Min } from 'class-validator';
import { Batch, Endpoint, Instances, IsFile, Model, type UploadedFile } from 'serve-fn';

/** Issue 16's validated echo: the request DTO, and what comes back. */
export class EchoRequest {
  @IsString() @MaxLength(2000)
  text!: string;

  @IsInt() @Min(0) @Max(100)
  n!: number;
}

export class EchoResponse {
  @IsString()
  text!: string;

  @IsInt()
  n!: number;
}

const echo = (request: EchoRequest): EchoResponse => ({ text: request.text.toUpperCase(), n: request.n + 1 });

/** The default: one worker-thread instance, each request its own call. */
@Model({ name: 'echo' })
@Instances(1)
export class Echo {
  @Endpoint('/echo', { body: EchoRequest, response: EchoResponse })
  run(request: EchoRequest): EchoResponse {
    return echo(request);
  }
}

/** The same on a dynamic batcher: up to 16 requests a call, waiting at most 1 ms. */
@Model({ name: 'echo-batched' })
@Instances(1)
export class EchoBatched {
  @Endpoint('/echo_batched', { body: EchoRequest, response: EchoResponse })
  @Batch(16, 1000)
  run(requests: EchoRequest[]): EchoResponse[] {
    return requests.map(echo);
  }
}

/** The same on the HTTP thread, as a model doing async I/O runs. */
@Model({ name: 'echo-inline' })
@Instances(1, { inline: true })
export class EchoInline {
  @Endpoint('/echo_inline', { body: EchoRequest, response: EchoResponse })
  run(request: EchoRequest): EchoResponse {
    return echo(request);
  }
}

export class UploadRequest {
  @IsFile({ maxSize: 1024 * 1024 })
  image!: UploadedFile;
}

export class UploadResponse {
  @IsInt()
  bytes!: number;
}

/** The OCR example's /ocr route with the model replaced by a no-op: a multipart upload read and answered. */
@Model({ name: 'upload' })
@Instances(1)
export class Upload {
  @Endpoint('/upload', { body: UploadRequest, consumes: 'multipart', response: UploadResponse })
  run(request: UploadRequest): UploadResponse {
    return { bytes: request.image.data.byteLength };
  }
}
