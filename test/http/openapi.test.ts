import 'reflect-metadata';
import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsOptional, IsString, MaxLength, Min, ValidateNested } from 'class-validator';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batch, Endpoint, Instances, IsFile, Model, ServeFnServer, type UploadedFile } from '../../src/index.js';

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

  @Endpoint('/voices/:id', { method: 'DELETE', params: VoiceParams, tags: ['danger'] })
  async remove(): Promise<void> {}
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
  422: { description: 'Default Response', content: { 'application/json': { schema: { $ref: '#/components/schemas/ValidationErrorBody' } } } },
  500: { description: 'Default Response', content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } },
  503: { description: 'Default Response', content: { 'application/json': { schema: { $ref: '#/components/schemas/ErrorBody' } } } },
};

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
      201: { description: 'Default Response', content: { 'application/json': { schema: { $ref: '#/components/schemas/ProsodyResponse' } } } },
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
    expect(res.body).toContain('<title>Swagger UI</title>');
    const init = await server.app.inject({ method: 'GET', url: '/docs/static/swagger-initializer.js' });
    expect(init.statusCode).toBe(200);
    expect(init.body).toContain('SwaggerUIBundle');
  });
});
