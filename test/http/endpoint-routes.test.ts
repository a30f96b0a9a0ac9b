import 'reflect-metadata';
import { request as httpRequest } from 'node:http';
import { gzipSync } from 'node:zlib';
import { Type } from 'class-transformer';
import { IsDefined, IsIn, IsInt, IsNumber, IsOptional, IsString, Max, MaxLength, Min, MinLength, ValidateNested } from 'class-validator';
import { injectable } from 'tsyringe';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Batch, createError, Endpoint, Instances, IsFile, Model, ServeFnServer, type RequestInfo, type UploadedFile } from '../../src/index.js';

/** One service, injected into both model classes below. */
@injectable()
class VoiceBank {
  private readonly voices = new Map([
    ['alto', 220],
    ['tenor', 330],
  ]);

  pitch(id: string): number | undefined {
    return this.voices.get(id);
  }

  ids(): string[] {
    return [...this.voices.keys()];
  }
}

const BODY_LIMIT = 64 * 1024;
const SHORT_BODY_LIMIT = 256;

class SftForm {
  @IsString() @MinLength(1) @MaxLength(20) tts_text!: string;
  @IsString() spk_id!: string;
  @IsOptional() @IsNumber() @Min(0.25) @Max(4) speed?: number;
}

class ImageForm {
  @IsFile({ maxSize: 1024, mimeTypes: ['image/png'] }) image!: UploadedFile;
  @IsString() caption!: string;
}

class Pitch {
  @IsNumber() @Min(50) hz!: number;
}

class Style {
  @IsString() @IsIn(['calm', 'bright']) mood!: string;
  @IsDefined() @ValidateNested() @Type(() => Pitch) pitch!: Pitch;
}

class SpeakRequest {
  @IsString() text!: string;
  @IsDefined() @ValidateNested() @Type(() => Style) style!: Style;
}

class ProsodyRequest {
  @IsString() text!: string;
  @IsString() spk_id!: string;
}

class ProsodyResponse {
  @IsString() text!: string;
  @IsNumber() pitch!: number;
  @IsInt() batch_size!: number;
}

class VoiceQuery {
  @IsOptional() @IsString() prefix?: string;
  @IsInt() @Min(1) limit!: number;
}

class VoiceParams {
  @IsInt() @Min(1) id!: number;
}

class VoiceUpdate {
  @IsString() name!: string;
}

/** What the batched endpoint saw, one entry per model call. */
const batches: string[][] = [];

@Model({ name: 'tts', description: 'speech' })
@Instances(1, { inline: true })
class Tts {
  constructor(private readonly voices: VoiceBank) {}

  @Endpoint('/inference_sft', { body: SftForm, consumes: 'multipart', produces: 'audio/wav' })
  async sft(form: SftForm): Promise<Buffer> {
    const pitch = this.voices.pitch(form.spk_id);
    if (pitch === undefined) throw createError('SF_ERR_BAD_REQUEST', `unknown speaker '${form.spk_id}'`);
    return Buffer.from(`RIFF:${pitch}:${form.tts_text}:${form.speed ?? 1}:${typeof form.speed}`);
  }

  @Endpoint('/caption', { body: ImageForm, consumes: 'multipart' })
  async caption(form: ImageForm): Promise<object> {
    const { filename, mimetype, data } = form.image;
    return { caption: form.caption, filename, mimetype, size: data.byteLength, isBuffer: Buffer.isBuffer(data), first: data[0] };
  }

  @Endpoint('/speak', { body: SpeakRequest })
  async speak(request: SpeakRequest, info: RequestInfo): Promise<object> {
    return { text: request.text, hz: request.style.pitch.hz, nested: request.style.pitch instanceof Pitch, header: info.headers['x-trace'] };
  }

  @Endpoint('/voices', { method: 'GET', query: VoiceQuery })
  async list(query: VoiceQuery): Promise<object> {
    const ids = this.voices.ids().filter((id) => id.startsWith(query.prefix ?? ''));
    return { ids: ids.slice(0, query.limit), limitType: typeof query.limit, isDto: query instanceof VoiceQuery };
  }

  @Endpoint('/voices/:id', { method: 'PUT', params: VoiceParams, body: VoiceUpdate })
  async update(body: VoiceUpdate, info: RequestInfo): Promise<object> {
    return { id: info.params.id, name: body.name };
  }

  @Endpoint('/voices/:id', { method: 'DELETE', params: VoiceParams, status: 204 })
  async remove(_body: unknown, info: RequestInfo): Promise<void> {
    if (info.params.id === 404) throw createError('SF_ERR_BAD_REQUEST', 'no voice 404');
  }

  @Endpoint('/raw/:name')
  async raw(body: unknown, info: RequestInfo): Promise<object> {
    return { body, params: info.params, query: info.query };
  }
}

@Model({ name: 'prosody' })
@Instances(1, { inline: true })
class Prosody {
  constructor(private readonly voices: VoiceBank) {}

  @Endpoint('/prosody', { body: ProsodyRequest, response: ProsodyResponse })
  @Batch({ maxBatchSize: 4, maxQueueDelayUs: 30_000_000 })
  async prosody(batch: ProsodyRequest[]): Promise<(ProsodyResponse | Error)[]> {
    const texts = batch.map((r) => r.text);
    batches.push(texts);
    if (texts.includes('explode')) throw new Error('vocoder ran out of memory');
    if (texts.includes('short')) return [];
    return batch.map((r) => {
      if (r.text === 'bad') return createError('SF_ERR_BAD_REQUEST', `cannot pronounce '${r.text}'`);
      if (r.text === 'broken') return new Error('vocoder glitch');
      return Object.assign(new ProsodyResponse(), { text: r.text, pitch: this.voices.pitch(r.spk_id) ?? 0, batch_size: batch.length, debug: 'dropped' });
    });
  }

  /** No DTO: the request is read within a tick, before the socket events of a finished body arrive. */
  @Endpoint('/tokens')
  @Batch({ maxBatchSize: 2, maxQueueDelayUs: 30_000_000 })
  async tokens(batch: { text: string }[]): Promise<number[]> {
    return batch.map((r) => r.text.split(' ').length * 10 + batch.length);
  }
}

/** A JSON endpoint with a body limit of its own, below the server's JSON limit. */
@Model({ name: 'short' })
@Instances(1, { inline: true })
class Short {
  @Endpoint('/short', { body: ProsodyRequest, bodyLimit: SHORT_BODY_LIMIT })
  async run(req: ProsodyRequest): Promise<{ text: string }> {
    return { text: req.text };
  }
}

/** Requests that reached the gated model, and the gate that holds them until the test opens it. */
const gatedCalls: string[] = [];
let openGate: () => void = () => {};

@Model({ name: 'gated' })
@Instances(1, { inline: true })
class Gated {
  @Endpoint('/gated')
  async run(body: { id: string }): Promise<string> {
    gatedCalls.push(body.id);
    if (body.id === 'first') await new Promise<void>((resolve) => (openGate = resolve));
    return body.id;
  }
}

let server: ServeFnServer;
let base: string;

beforeAll(async () => {
  // As `serve-fn dev` runs it: 500s show their message (error-answers.test.ts covers production's).
  server = new ServeFnServer({ models: [Tts, Prosody, Gated, Short], logger: false, collectProcessMetrics: false, bodyLimit: BODY_LIMIT, exposeErrors: true });
  await server.start();
  base = await server.app.listen({ port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await server.close();
});

interface Answer {
  status: number;
  type: string | null;
  text: string;
  json(): any;
}

async function call(method: string, path: string, body?: unknown, headers: Record<string, string> = {}): Promise<Answer> {
  const init: RequestInit = { method, headers };
  if (body instanceof FormData || typeof body === 'string') init.body = body;
  else if (body !== undefined) {
    init.body = JSON.stringify(body);
    init.headers = { 'content-type': 'application/json', ...headers };
  }
  const res = await fetch(base + path, init);
  const text = await res.text();
  return { status: res.status, type: res.headers.get('content-type'), text, json: () => JSON.parse(text) };
}

function form(fields: Record<string, string>, file?: { name: string; bytes: Uint8Array; type: string }): FormData {
  const data = new FormData();
  for (const [k, v] of Object.entries(fields)) data.append(k, v);
  if (file) data.append(file.name, new Blob([file.bytes], { type: file.type }), `${file.name}.bin`);
  return data;
}

describe('JSON endpoints', () => {
  it('validates the body into its DTO, nested DTOs included, and passes request headers', async () => {
    const res = await call('POST', '/speak', { text: 'hi', style: { mood: 'calm', pitch: { hz: 120 } } }, { 'x-trace': 'abc' });
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ text: 'hi', hz: 120, nested: true, header: 'abc' });
  });

  it("answers missing fields with FastAPI's 422 body", async () => {
    const res = await call('POST', '/speak', {});
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        { loc: ['body', 'text'], msg: 'Field required', type: 'missing' },
        { loc: ['body', 'style'], msg: 'Field required', type: 'missing' },
      ],
    });
  });

  it('answers wrong types with one issue per field, with the loc path running through nested DTOs', async () => {
    const res = await call('POST', '/speak', { text: 5, style: { mood: 'angry', pitch: { hz: '120' } } });
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        { loc: ['body', 'text'], msg: 'text must be a string', type: 'isString', input: 5 },
        { loc: ['body', 'style', 'mood'], msg: 'mood must be one of the following values: calm, bright', type: 'isIn', input: 'angry' },
        { loc: ['body', 'style', 'pitch', 'hz'], msg: 'hz must be a number conforming to the specified constraints', type: 'isNumber', input: '120' },
      ],
    });
  });

  it('answers a file sent for a string form field with 422 instead of reading it as "[object Object]"', async () => {
    const multipart = new FormData();
    multipart.append('tts_text', new Blob([new Uint8Array([1, 2])], { type: 'text/plain' }), 'text.txt');
    multipart.append('spk_id', 'alto');
    const file = await call('POST', '/inference_sft', multipart);
    expect(file.status).toBe(422);
    expect(file.json()).toEqual({
      detail: [
        { loc: ['body', 'tts_text'], msg: 'tts_text must be a string', type: 'isString', input: { filename: 'text.txt', mimetype: 'text/plain', size: 2 } },
      ],
    });
  });

  it.each([
    ['a JSON array', [1, 2], 'application/json'],
    ['plain text', 'hello', 'text/plain'],
  ])('answers a body that is %s with a 422 at loc ["body"]', async (_, body, type) => {
    const res = await call('POST', '/speak', typeof body === 'string' ? body : JSON.stringify(body), { 'content-type': type });
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({ detail: [{ loc: ['body'], msg: 'Input should be a valid object', type: 'model_attributes_type', input: body }] });
  });

  it("answers invalid JSON with FastAPI's 422 json_invalid, and an empty body as a missing one", async () => {
    const res = await call('POST', '/speak', '{"text": ', { 'content-type': 'application/json' });
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({
      detail: [{ loc: ['body', 9], msg: 'JSON decode error', type: 'json_invalid', input: {}, ctx: { error: 'Unexpected end of JSON input' } }],
    });
    const empty = await call('POST', '/speak', '', { 'content-type': 'application/json' });
    expect(empty.status).toBe(422);
    expect(empty.json()).toEqual({ detail: [{ loc: ['body'], msg: 'Field required', type: 'missing', input: null }] });
  });

  it('answers a body over the limit with 413 SF_ERR_BODY_TOO_LARGE', async () => {
    const res = await call('POST', '/speak', { text: 'x'.repeat(BODY_LIMIT), style: {} });
    expect(res.status).toBe(413);
    expect(res.json()).toEqual({ error: `Request body is larger than the limit of ${BODY_LIMIT} bytes.`, code: 'SF_ERR_BODY_TOO_LARGE' });
  });

  it("answers a body over an endpoint's own bodyLimit with 413 naming that limit, while other endpoints keep the server's", async () => {
    const text = 'x'.repeat(SHORT_BODY_LIMIT);
    const over = await call('POST', '/short', { text, spk_id: 'alto' });
    expect([over.status, over.json()]).toEqual([413, { error: `Request body is larger than the limit of ${SHORT_BODY_LIMIT} bytes.`, code: 'SF_ERR_BODY_TOO_LARGE' }]);
    const under = await call('POST', '/short', { text: 'hello', spk_id: 'alto' });
    expect([under.status, under.json()]).toEqual([200, { text: 'hello' }]);
    const other = await call('POST', '/raw/other', { text });
    expect([other.status, other.json().body]).toEqual([200, { text }]);
    // A gzip body is measured after it is inflated, against the same endpoint limit.
    const zipped = await server.app.inject({
      method: 'POST',
      url: '/short',
      headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
      payload: gzipSync(JSON.stringify({ text, spk_id: 'alto' })),
    });
    expect([zipped.statusCode, zipped.json().code]).toEqual([413, 'SF_ERR_BODY_TOO_LARGE']);
  });

  it("caps an endpoint's bodyLimit at the server's bodyLimit", async () => {
    @Model({ name: 'capped' })
    @Instances(1, { inline: true })
    class Capped {
      @Endpoint('/capped', { bodyLimit: 10 * BODY_LIMIT })
      async run(body: unknown): Promise<unknown> {
        return body;
      }
    }
    const capped = new ServeFnServer({ models: [Capped], logger: false, collectProcessMetrics: false, bodyLimit: BODY_LIMIT });
    await capped.start();
    try {
      const res = await capped.app.inject({ method: 'POST', url: '/capped', headers: { 'content-type': 'application/json' }, payload: JSON.stringify('x'.repeat(BODY_LIMIT)) });
      expect([res.statusCode, res.json()]).toEqual([413, { error: `Request body is larger than the limit of ${BODY_LIMIT} bytes.`, code: 'SF_ERR_BODY_TOO_LARGE' }]);
    } finally {
      await capped.close();
    }
  });

  it('answers a content type without a parser with 415 naming that content type', async () => {
    const res = await call('POST', '/speak', '<text/>', { 'content-type': 'application/xml' });
    expect(res.status).toBe(415);
    expect(res.json()).toEqual({
      error: "Content type 'application/xml' is not accepted by this route; send application/json.",
      code: 'SF_ERR_UNSUPPORTED_MEDIA_TYPE',
    });
  });

  it('answers an unknown route with 404 in the error shape', async () => {
    const res = await call('POST', '/nowhere', {});
    expect(res.status).toBe(404);
    expect(res.json()).toEqual({ error: 'Not Found', code: 'SF_ERR_NOT_FOUND' });
  });

  it('passes the raw body, path params and query to an endpoint without DTOs', async () => {
    const res = await call('POST', '/raw/bob?x=1&x=2&y=z', { any: ['thing'] });
    expect(res.json()).toEqual({ body: { any: ['thing'] }, params: { name: 'bob' }, query: { x: ['1', '2'], y: 'z' } });
  });
});

describe('GET, PUT and DELETE endpoints with query and path DTOs', () => {
  it('gives a GET endpoint its query DTO, converted to the declared types', async () => {
    const res = await call('GET', '/voices?limit=1&prefix=t');
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ ids: ['tenor'], limitType: 'number', isDto: true });
    expect((await call('GET', '/voices?limit=5')).json().ids).toEqual(['alto', 'tenor']);
  });

  it('answers an invalid query with 422 at loc "query", showing what was sent', async () => {
    const res = await call('GET', '/voices?limit=abc');
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({
      detail: [{ loc: ['query', 'limit'], msg: 'limit must be an integer number', type: 'isInt', input: 'abc' }],
    });
    expect((await call('GET', '/voices')).json()).toEqual({ detail: [{ loc: ['query', 'limit'], msg: 'Field required', type: 'missing' }] });
  });

  it('converts path params for PUT and checks them at loc "path"', async () => {
    const ok = await call('PUT', '/voices/7', { name: 'bass' });
    expect(ok.status).toBe(200);
    expect(ok.json()).toEqual({ id: 7, name: 'bass' });
    const bad = await call('PUT', '/voices/0', { name: 'bass' });
    expect(bad.status).toBe(422);
    expect(bad.json()).toEqual({ detail: [{ loc: ['path', 'id'], msg: 'id must not be less than 1', type: 'min', input: '0' }] });
  });

  it('answers DELETE with the declared status and no body, and a model SF_ERR_BAD_REQUEST with 400', async () => {
    const ok = await call('DELETE', '/voices/3');
    expect(ok.status).toBe(204);
    expect(ok.text).toBe('');
    const missing = await call('DELETE', '/voices/404');
    expect(missing.status).toBe(400);
    expect(missing.json()).toEqual({ error: 'no voice 404', code: 'SF_ERR_BAD_REQUEST' });
  });
});

describe('multipart endpoints', () => {
  it('reads form fields into the DTO, converting numbers, and sends a Buffer result with the produces type', async () => {
    const res = await call('POST', '/inference_sft', form({ tts_text: 'hello', spk_id: 'tenor', speed: '1.5' }));
    expect(res.status).toBe(200);
    expect(res.type).toBe('audio/wav');
    expect(res.text).toBe('RIFF:330:hello:1.5:number');
  });

  it('answers invalid form fields with 422 at loc "body"', async () => {
    const res = await call('POST', '/inference_sft', form({ tts_text: '', speed: 'fast' }));
    expect(res.status).toBe(422);
    expect(res.json()).toEqual({
      detail: [
        { loc: ['body', 'tts_text'], msg: 'tts_text must be longer than or equal to 1 characters', type: 'minLength', input: '' },
        { loc: ['body', 'spk_id'], msg: 'Field required', type: 'missing' },
        { loc: ['body', 'speed'], msg: 'speed must be a number conforming to the specified constraints', type: 'isNumber', input: 'fast' },
      ],
    });
  });

  it('answers an error the model raises with createError(SF_ERR_BAD_REQUEST) with 400', async () => {
    const res = await call('POST', '/inference_sft', form({ tts_text: 'hi', spk_id: 'bass' }));
    expect(res.status).toBe(400);
    expect(res.json()).toEqual({ error: "unknown speaker 'bass'", code: 'SF_ERR_BAD_REQUEST' });
  });

  it('hands an uploaded file to the model as a Buffer with its name and type', async () => {
    const res = await call('POST', '/caption', form({ caption: 'cat' }, { name: 'image', bytes: new Uint8Array([137, 80, 78, 71]), type: 'image/png' }));
    expect(res.status).toBe(200);
    expect(res.json()).toEqual({ caption: 'cat', filename: 'image.bin', mimetype: 'image/png', size: 4, isBuffer: true, first: 137 });
  });

  it('rejects a file of the wrong type or over maxSize with 422, describing the file instead of echoing it', async () => {
    const msg = 'image must be an uploaded file of at most 1024 bytes of type image/png';
    const gif = await call('POST', '/caption', form({ caption: 'c' }, { name: 'image', bytes: new Uint8Array(3), type: 'image/gif' }));
    expect(gif.status).toBe(422);
    expect(gif.json()).toEqual({
      detail: [{ loc: ['body', 'image'], msg, type: 'isFile', input: { filename: 'image.bin', mimetype: 'image/gif', size: 3 } }],
    });
    const big = await call('POST', '/caption', form({ caption: 'c' }, { name: 'image', bytes: new Uint8Array(2048), type: 'image/png' }));
    expect(big.status).toBe(422);
    expect(big.json().detail).toEqual([{ loc: ['body', 'image'], msg, type: 'isFile', input: { filename: 'image.bin', mimetype: 'image/png', size: 2048 } }]);
    const none = await call('POST', '/caption', form({ caption: 'c' }));
    expect(none.json()).toEqual({ detail: [{ loc: ['body', 'image'], msg: 'Field required', type: 'missing' }] });
  });

  it('answers a file over the body limit with 413 SF_ERR_BODY_TOO_LARGE', async () => {
    const res = await call('POST', '/caption', form({ caption: 'c' }, { name: 'image', bytes: new Uint8Array(BODY_LIMIT + 1), type: 'image/png' }));
    expect(res.status).toBe(413);
    expect(res.json()).toEqual({ error: `Request body is larger than the limit of ${BODY_LIMIT} bytes.`, code: 'SF_ERR_BODY_TOO_LARGE' });
  });

  it('answers JSON sent to a multipart endpoint with 415', async () => {
    const res = await call('POST', '/inference_sft', { tts_text: 'hi', spk_id: 'alto' });
    expect(res.status).toBe(415);
    expect(res.json()).toEqual({
      error: "Content type 'application/json' is not accepted by /inference_sft; send multipart/form-data.",
      code: 'SF_ERR_UNSUPPORTED_MEDIA_TYPE',
    });
  });
});

describe('a @Batch endpoint over HTTP', () => {
  const prosody = (text: string): Promise<Answer> => call('POST', '/prosody', { text, spk_id: 'alto' });

  it('runs concurrent requests as one batch and answers each with its own result, shaped by the response DTO', async () => {
    batches.length = 0;
    const answers = await Promise.all(['a', 'b', 'c', 'd'].map(prosody));
    expect(batches).toHaveLength(1);
    expect([...batches[0]].sort()).toEqual(['a', 'b', 'c', 'd']);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
    expect(answers.map((a) => a.json())).toEqual(['a', 'b', 'c', 'd'].map((text) => ({ text, pitch: 220, batch_size: 4 })));
  });

  it('batches raw JSON bodies of an endpoint without a DTO', async () => {
    const answers = await Promise.all(['one two', 'three'].map((text) => call('POST', '/tokens', { text })));
    expect(answers.map((a) => [a.status, a.text])).toEqual([
      [200, '22'],
      [200, '12'],
    ]);
  });

  it('fails only the requests whose entry is an Error', async () => {
    batches.length = 0;
    const [ok, bad, broken, fine] = await Promise.all(['ok', 'bad', 'broken', 'fine'].map(prosody));
    expect(batches).toHaveLength(1);
    expect(ok.status).toBe(200);
    expect(fine.json()).toEqual({ text: 'fine', pitch: 220, batch_size: 4 });
    expect(bad.status).toBe(400);
    expect(bad.json()).toEqual({ error: "cannot pronounce 'bad'", code: 'SF_ERR_BAD_REQUEST' });
    expect(broken.status).toBe(500);
    expect(broken.json()).toEqual({ error: "Model 'prosody' failed in Prosody.prosody: vocoder glitch", code: 'SF_ERR_EXECUTION_FAILED' });
  });

  it('fails every request of the batch with 500 and the message when the method throws', async () => {
    const answers = await Promise.all(['x', 'explode', 'y', 'z'].map(prosody));
    for (const answer of answers) {
      expect(answer.status).toBe(500);
      expect(answer.json()).toEqual({ error: "Model 'prosody' failed in Prosody.prosody: vocoder ran out of memory", code: 'SF_ERR_EXECUTION_FAILED' });
    }
  });

  it('fails the batch with a 500 naming the method when the result has the wrong length', async () => {
    const answers = await Promise.all(['short', 'b', 'c', 'd'].map(prosody));
    for (const answer of answers) {
      expect(answer.status).toBe(500);
      expect(answer.json()).toEqual({
        error: 'Prosody.prosody returned 0 results for a batch of 4 requests: a batched method (@Batch, or execute(requests)) must return one result (or Error) per request, in order.',
        code: 'SF_ERR_BATCH_RESULT_LENGTH',
      });
    }
  });

  it('shows the batches and their outcomes in /metrics', async () => {
    const metrics = (await call('GET', '/metrics')).text.split('\n');
    // Three batches returned (4 + 2 + 2 successes); the thrown and the wrong-length batch failed all 8 of theirs.
    expect(metrics).toContain('nv_inference_exec_count{model="prosody",version="1"} 3');
    expect(metrics).toContain('nv_inference_count{model="prosody",version="1"} 10');
    // The entry answered 400 is the client's fault (OTHER); the model failed the other 9 (BACKEND).
    expect(metrics).toContain('nv_inference_request_failure{model="prosody",version="1",reason="BACKEND"} 9');
    expect(metrics).toContain('nv_inference_request_failure{model="prosody",version="1",reason="OTHER"} 1');
    expect(metrics).toContain('nv_inference_request_failure{model="prosody",version="1",reason="CANCELED"} 0');
    expect(metrics).toContain('nv_inference_request_success{model="prosody",version="1"} 8');
    expect(metrics).toContain('serve_fn_batch_size_bucket{le="1",model="prosody",version="1"} 0');
    expect(metrics).toContain('serve_fn_batch_size_bucket{le="2",model="prosody",version="1"} 1');
    expect(metrics).toContain('serve_fn_batch_size_bucket{le="4",model="prosody",version="1"} 3');
  });
});

describe('client disconnects', () => {
  async function metric(line: string): Promise<number> {
    const found = (await call('GET', '/metrics')).text.split('\n').find((l) => l.startsWith(line));
    return Number(found?.split(' ').at(-1));
  }

  it('removes a queued request whose client went away, so the model never runs it', async () => {
    const first = call('POST', '/gated', { id: 'first' });
    await expect.poll(() => gatedCalls).toEqual(['first']);

    const abandoned = httpRequest(`${base}/gated`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    abandoned.on('error', () => {});
    abandoned.end(JSON.stringify({ id: 'abandoned' }));
    await expect.poll(() => metric('nv_inference_pending_request_count{model="gated"')).toBe(1);
    abandoned.destroy();
    await expect.poll(() => metric('nv_inference_request_failure{model="gated",version="1",reason="CANCELED"}')).toBe(1);

    openGate();
    expect((await first).text).toBe('first');
    expect((await call('POST', '/gated', { id: 'after' })).text).toBe('after');
    expect(gatedCalls).toEqual(['first', 'after']);
  });
});
