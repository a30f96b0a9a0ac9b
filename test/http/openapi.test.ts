import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsOptional, IsString, MaxLength, Min, ValidateNested } from 'class-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batch, Endpoint, ERROR_CATALOGUE, Instances, IsFile, Model, ServeFnServer, WebSocketEndpoint, type UploadedFile } from '../../src/index.js';

class SftForm {
  @IsString() @MaxLength(2000) tts_text!: string;
  @IsString() @IsIn(['alto', 'tenor']) spk_id!: string;
  @IsOptional() @IsFile({ mimeTypes: ['audio/wav'] }) prompt_wav?: UploadedFile;
}

class Pitch {
  @IsInt() @Min(50) hz!: number;
}

class ProsodyRequest {
  @IsString() text!: string;
  @IsDefined() @ValidateNested() @Type(() => Pitch) pitch!: Pitch;
}

class ProsodyResponse {
  @IsInt() syllables!: number;
}

class VoiceQuery {
  @IsInt() @Min(1) limit!: number;
  @IsOptional() @IsString() prefix?: string;
}

class VoiceParams {
  @IsInt() id!: number;
}

@Model({ name: 'cosyvoice', version: '2', description: 'text to speech' })
@Instances(1, { inline: true })
class CosyVoice {
  @Endpoint('/inference_sft', { body: SftForm, consumes: 'multipart', produces: 'audio/wav', summary: 'Synthesize speech' })
  async sft(): Promise<Buffer> {
    return Buffer.alloc(0);
  }

  @Endpoint('/prosody', { body: ProsodyRequest, response: ProsodyResponse, status: 201, description: 'Estimates syllables.' })
  @Batch({ maxBatchSize: 16, maxQueueDelayUs: 2000, preferredBatchSizes: [4, 8], priorityLevels: 2, defaultQueuePolicy: { maxQueueSize: 64, defaultTimeoutUs: 100_000 } })
  async prosody(batch: ProsodyRequest[]): Promise<ProsodyResponse[]> {
    return batch.map(() => ({ syllables: 1 }));
  }
}

@Model({ name: 'voices', tag: 'voice admin' })
@Instances(1, { inline: true })
class Voices {
  @Endpoint('/voices', { method: 'GET', query: VoiceQuery })
  async list(): Promise<string[]> {
    return [];
  }

  @Endpoint('/voices/:id', { method: 'DELETE', params: VoiceParams, tags: ['danger'], status: 204 })
  async remove(): Promise<void> {}

  @Endpoint('/voices/report', { method: 'GET', produces: 'application/problem+json' })
  async report(): Promise<Buffer> {
    return Buffer.from('{}');
  }

  @WebSocketEndpoint('/voices/live', { message: VoiceQuery })
  async *live(messages: AsyncIterable<unknown>): AsyncGenerator<object> {
    for await (const message of messages) yield { message };
  }
}

type Doc = Record<string, any>;

let server: ServeFnServer;
let doc: Doc;

beforeAll(async () => {
  server = new ServeFnServer({ models: [CosyVoice, Voices], title: 'Speech API', version: '0.3.0', logger: false, collectProcessMetrics: false });
  doc = await server.openapi();
});

afterAll(async () => {
  await server.close();
});

const errorResponses = {
  422: {
    description: 'Validation Error',
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationErrorBody' }, example: { detail: [{ loc: ['body', 'text'], msg: 'Field required', type: 'missing' }] } } },
  },
  500: {
    description: expect.stringContaining('Internal Server Error: the model failed'),
    content: {
      'application/json': {
        schema: { $ref: '#/components/schemas/ErrorBody' },
        example: { error: "Model '<model>' failed in /prosody: <what the model threw>", code: 'SF_ERR_EXECUTION_FAILED' },
      },
    },
  },
  503: {
    description: expect.stringContaining('Service Unavailable: the queue is full'),
    content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' }, example: { error: 'Exceeds maximum queue size', code: 'SF_ERR_QUEUE_FULL' } } },
  },
};

/** Every response of every operation in the document, as `[label, status, response]`. */
function responses(): [string, string, Doc][] {
  return Object.entries(doc.paths as Doc).flatMap(([path, item]) =>
    Object.entries(item as Doc).flatMap(([method, op]) => Object.entries((op as Doc).responses as Doc).map(([status, response]) => [`${method} ${path}`, status, response as Doc] as [string, string, Doc])),
  );
}

describe('the OpenAPI document', () => {
  it('is OpenAPI 3 with the title, version and a description of every model', () => {
    expect(doc.openapi).toBe('3.0.3');
    expect(doc.info).toEqual({ title: 'Speech API', version: '0.3.0', description: '**cosyvoice** v2: text to speech\n\n**voices** v1' });
  });

  it('lists every endpoint once, under its HTTP method, with an operation id per model method', () => {
    const operations = Object.entries(doc.paths as Doc).flatMap(([path, item]) =>
      Object.entries(item as Doc).map(([method, op]) => `${method.toUpperCase()} ${path} ${(op as Doc).operationId ?? '-'}`),
    );
    expect(operations.filter((o) => !o.endsWith(' -')).sort()).toEqual([
      'DELETE /voices/{id} voices_remove',
      'GET /voices voices_list',
      'GET /voices/live voices_live',
      'GET /voices/report voices_report',
      'POST /inference_sft cosyvoice_sft',
      'POST /prosody cosyvoice_prosody',
    ]);
  });

  it('tags endpoints with their model name, the model tag, or the endpoint tags', () => {
    expect(doc.paths['/prosody'].post.tags).toEqual(['cosyvoice']);
    expect(doc.paths['/voices'].get.tags).toEqual(['voice admin']);
    expect(doc.paths['/voices/{id}'].delete.tags).toEqual(['danger']);
    expect(doc.paths['/health/live'].get.tags).toEqual(['health']);
    expect(doc.paths['/health/ready'].get.tags).toEqual(['health']);
  });

  it('refers to request and response DTOs as named components, under the declared status', () => {
    const op = doc.paths['/prosody'].post;
    expect(op.requestBody).toEqual({ required: true, content: { 'application/json': { schema: { $ref: '#/components/schemas/ProsodyRequest' } } } });
    expect(op.responses).toEqual({
      201: { description: 'Successful Response', content: { 'application/json': { schema: { $ref: '#/components/schemas/ProsodyResponse' } } } },
      ...errorResponses,
    });
  });

  it('publishes the DTO schemas from their class-validator rules, nested DTOs by reference', () => {
    const schemas = doc.components.schemas as Doc;
    expect(schemas.ProsodyRequest).toEqual({
      type: 'object',
      properties: { text: { type: 'string' }, pitch: { $ref: '#/components/schemas/Pitch' } },
      required: ['text', 'pitch'],
    });
    expect(schemas.Pitch).toEqual({ type: 'object', properties: { hz: { type: 'integer', minimum: 50 } }, required: ['hz'] });
    expect(schemas.ProsodyResponse).toEqual({ type: 'object', properties: { syllables: { type: 'integer' } }, required: ['syllables'] });
    expect(schemas.ErrorBody.required).toEqual(['error', 'code']);
    expect(schemas.ErrorBody.properties.code.enum).toContain('SF_ERR_DRAINING');
  });

  it("lists only the served models' DTOs as components: no other class from class-validator's storage", () => {
    expect(Object.keys(doc.components.schemas).sort()).toEqual(['ErrorBody', 'Pitch', 'ProsodyRequest', 'ProsodyResponse', 'SftForm', 'ValidationErrorBody', 'VoiceParams', 'VoiceQuery']);
    expect(JSON.stringify(doc)).not.toContain('Object#');
  });

  it('describes every response of every route, none as "Default Response"', () => {
    const all = responses();
    expect(all.length).toBeGreaterThan(40);
    expect(all.filter(([, , r]) => typeof r.description !== 'string' || r.description === '' || r.description === 'Default Response').map(([op, status]) => `${op} ${status}`)).toEqual([]);
  });

  it('shows for each error status an example whose code answers that status, not the first code of the enum', () => {
    const coded = responses().flatMap(([op, status, r]) => {
      const code = r.content?.['application/json']?.example?.code as keyof typeof ERROR_CATALOGUE | undefined;
      return code ? [{ op, status: Number(status), code }] : [];
    });
    expect(coded.length).toBeGreaterThan(10);
    expect(coded.filter(({ status, code }) => ERROR_CATALOGUE[code]?.status !== status)).toEqual([]);
    expect(coded.map(({ code }) => code)).not.toContain('SF_ERR_MODEL_NAME_MISSING');
    expect(doc.paths['/health/ready'].get.responses['503'].content['application/json'].example).toEqual({ error: 'Server is not ready: terminating.', code: 'SF_ERR_NOT_READY' });
  });

  it('documents a WebSocket route as an upgrade: 101, 426 for plain HTTP, 503 over the connection limit', () => {
    const op = doc.paths['/voices/live'].get;
    expect(op['x-websocket']).toEqual({ messages: { client: { $ref: '#/components/schemas/VoiceQuery' } } });
    expect(op.responses['101'].description).toBe('Switching Protocols: the connection is now a WebSocket.');
    expect(op.responses['426'].content['application/json'].example.code).toBe('SF_ERR_UPGRADE_REQUIRED');
    expect(op.responses['426'].content['application/json'].example.error).toContain('/voices/live is a WebSocket endpoint');
    expect(op.responses['503'].content['application/json'].example.code).toBe('SF_ERR_SOCKET_LIMIT');
  });

  it('describes readiness as it is: the port opens once the models have initialised, so 503 means shutting down or a model without instances', () => {
    expect(doc.paths['/health/ready'].get.summary).toBe('Readiness probe: 200 while the server takes requests; 503 once it is shutting down, or while a model has no running instance');
    expect(doc.paths['/health/ready'].get.summary).not.toContain('starting');
  });

  it('documents the success answer of an endpoint without a response DTO: binary as its produces type, else any JSON or a Buffer', () => {
    expect(doc.paths['/inference_sft'].post.responses['200']).toEqual({ description: 'Successful Response', content: { 'audio/wav': { schema: { type: 'string', format: 'binary' } } } });
    expect(doc.paths['/voices'].get.responses['200']).toEqual({
      description: 'Successful Response',
      content: { 'application/json': { schema: {} }, 'application/octet-stream': { schema: { type: 'string', format: 'binary' } } },
    });
    expect(doc.paths['/voices/{id}'].delete.responses['204']).toEqual({ description: 'Successful Response: no content.' });
    expect(doc.paths['/voices/report'].get.responses['200']).toEqual({ description: 'Successful Response', content: { 'application/problem+json': { schema: {} } } });
  });

  it('documents the request_id that production 500 bodies carry in ErrorBody', () => {
    expect(doc.components.schemas.ErrorBody).toEqual({
      type: 'object',
      properties: {
        error: { type: 'string' },
        code: { type: 'string', enum: Object.keys(ERROR_CATALOGUE) },
        request_id: { type: 'string', description: expect.stringContaining('x-request-id') },
      },
      required: ['error', 'code'],
    });
  });

  it('documents a multipart endpoint as multipart/form-data with a binary file field', () => {
    const op = doc.paths['/inference_sft'].post;
    expect(op.summary).toBe('Synthesize speech');
    expect(op.requestBody.content).toEqual({ 'multipart/form-data': { schema: { $ref: '#/components/schemas/SftForm' } } });
    expect(doc.components.schemas.SftForm).toEqual({
      type: 'object',
      properties: {
        tts_text: { type: 'string', maxLength: 2000 },
        spk_id: { type: 'string', enum: ['alto', 'tenor'] },
        prompt_wav: { type: 'string', format: 'binary' },
      },
      required: ['tts_text', 'spk_id'],
    });
  });

  it('shows the batching settings, or that there are none, in the description', () => {
    expect(doc.paths['/prosody'].post.description).toBe(
      'Estimates syllables.\n\nModel **cosyvoice** v2: text to speech.\n\n' +
        '**Dynamic batching:** max batch size 16, max queue delay 2000 µs, preferred sizes 4, 8, 2 priority levels, queue limit 64, queue timeout 100000 µs (REJECT).',
    );
    expect(doc.paths['/voices'].get.description).toBe('Not batched: each request runs on its own.');
    expect(doc.paths['/voices'].get.summary).toBe('voices.list');
  });

  it('turns query and path DTOs into one parameter per property', () => {
    expect(doc.paths['/voices'].get.parameters).toEqual([
      { in: 'query', name: 'limit', required: true, schema: { type: 'integer', minimum: 1 } },
      { in: 'query', name: 'prefix', required: false, schema: { type: 'string' } },
    ]);
    expect(doc.paths['/voices/{id}'].delete.parameters).toEqual([{ in: 'path', name: 'id', required: true, schema: { type: 'integer' } }]);
  });
});

describe('the served documentation', () => {
  beforeAll(async () => {
    await server.start();
  });

  it('serves the same document at /openapi.json, which does not list itself', async () => {
    const res = await server.app.inject({ method: 'GET', url: '/openapi.json' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('application/json; charset=utf-8');
    expect(res.json()).toEqual(JSON.parse(JSON.stringify(doc)));
    expect(Object.keys(doc.paths)).not.toContain('/openapi.json');
  });

  it('serves Swagger UI at /docs', async () => {
    const res = await server.app.inject({ method: 'GET', url: '/docs' });
    expect(res.statusCode).toBe(200);
    expect(res.headers['content-type']).toBe('text/html; charset=utf-8');
    expect(res.body).toContain('<title>Speech API - Swagger UI</title>');
    const init = await server.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.statusCode).toBe(200);
    expect(init.body).toContain('SwaggerUIBundle');
    // The plugin that hides "Try it out" on WebSocket routes (test/e2e/swagger-ui.test.ts sees it work).
    expect(init.body).toMatch(/allowTryItOutFor[^]*x-websocket/);
  });
});
