import { request as httpRequest } from 'node:http';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/index.js';
import { MODEL_FOLDER, Qwen3Decoder } from '../../examples/class-generator/index.js';
import { writeDecoderFolder, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';
import { referenceGreedy } from '../helpers/decoder-reference.js';

/**
 * The README's generator class (examples/class-generator): the tiny Qwen3 export served twice by
 * one server, as a folder (no code) and behind the class, whose step hook runs the same ONNX file
 * with its own KV cache on a worker-thread instance. Both answer the same greedy tokens to the
 * openai SDK, streamed or not. The class's module is re-exported from a temporary folder that
 * holds the generated model folder, since its folder is read from beside the module.
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-class-generator-'));
let folder: DecoderFolder;
let server: ServeFnServer;
let client: OpenAI;
let address: string;
const FOLDER_NAME = MODEL_FOLDER;
const CLASS_NAME = 'qwen3-class';

beforeAll(async () => {
  folder = writeDecoderFolder(join(root, MODEL_FOLDER));
  writeFileSync(join(root, 'index.ts'), `export { Qwen3Decoder } from ${JSON.stringify(new URL('../../examples/class-generator/index.ts', import.meta.url).href)};\n`);
  server = new ServeFnServer({ models: [Qwen3Decoder], moduleUrl: pathToFileURL(join(root, 'index.ts')).href, generativeFolders: [folder.dir], collectProcessMetrics: false });
  address = await server.listen(0, '127.0.0.1');
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${address}/v1`, maxRetries: 0 });
}, 120_000);
afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

const cached = async (): Promise<{ sequences: number[]; tokens: number }> => (await server.app.inject({ method: 'GET', url: '/qwen3-class/cache' })).json();

describe('a @GenerativeModel class (examples/class-generator)', () => {
  it("is the README's example, word for word", () => {
    const readme = readFileSync(new URL('../../README.md', import.meta.url), 'utf8');
    const section = readme.slice(readme.indexOf('### A generator from a class'));
    const block = /```ts\n([\s\S]*?)```/.exec(section)![1];
    expect(block).toBe(readFileSync(new URL('../../examples/class-generator/qwen3-decoder.ts', import.meta.url), 'utf8'));
  });

  it('is listed beside the folder, with the same context, and ready on /v2', async () => {
    const models = await client.models.list();
    const listed = Object.fromEntries(models.data.map((m) => [m.id, (m as unknown as { max_model_len: number }).max_model_len]));
    expect(listed).toEqual({ [FOLDER_NAME]: 256, [CLASS_NAME]: 256 });
    expect((await server.app.inject({ method: 'GET', url: `/v2/models/${CLASS_NAME}/ready` })).statusCode).toBe(200);
  });

  it('answers chat completions with the greedy tokens the folder answers, and the float64 reference generates', async () => {
    const ask = (model: string) => client.chat.completions.create({ model, messages: [{ role: 'user', content: 'Capital of France?' }], temperature: 0, max_tokens: 8 });
    const [byFolder, byClass] = [await ask(FOLDER_NAME), await ask(CLASS_NAME)];
    expect(byClass.choices[0]!.message.content).toBe(byFolder.choices[0]!.message.content);
    expect(byClass.choices[0]!.finish_reason).toBe(byFolder.choices[0]!.finish_reason);
    expect(byClass.usage).toEqual(byFolder.usage);

    const prompt = [5, 9, 200, 31];
    const complete = (model: string) => client.completions.create({ model, prompt, temperature: 0, max_tokens: 6, ignore_eos: true } as OpenAI.CompletionCreateParamsNonStreaming);
    const served = server.generators.find((g) => g.generator.name === CLASS_NAME)!;
    const expected = await served.tokenizer.decode(referenceGreedy(folder.weights, prompt, 6), true);
    expect((await complete(CLASS_NAME)).choices[0]!.text).toBe(expected);
    expect((await complete(FOLDER_NAME)).choices[0]!.text).toBe(expected);
  });

  it('streams what the folder streams, for concurrent requests', async () => {
    const stream = async (model: string, content: string): Promise<string> => {
      let text = '';
      const chunks = await client.chat.completions.create({ model, messages: [{ role: 'user', content }], temperature: 0, max_tokens: 10, stream: true, stream_options: { include_usage: true } });
      for await (const chunk of chunks) text += chunk.choices[0]?.delta.content ?? '';
      return text;
    };
    const questions = ['Hi', 'What is two plus two?', 'Name a colour'];
    const [byFolder, byClass] = await Promise.all([Promise.all(questions.map((q) => stream(FOLDER_NAME, q))), Promise.all(questions.map((q) => stream(CLASS_NAME, q)))]);
    expect(byClass).toEqual(byFolder);
  });

  it("a client that goes away mid-stream frees the class's sequence: release() drops its cache", async () => {
    // A raw request whose socket the test destroys: the client is gone, as a closed browser tab is.
    const body = JSON.stringify({ model: CLASS_NAME, messages: [{ role: 'user', content: 'Tell me a long story' }], temperature: 0, max_tokens: 200, stream: true, ignore_eos: true });
    const request = httpRequest(`${address}/v1/chat/completions`, { method: 'POST', headers: { 'content-type': 'application/json' } });
    const during = await new Promise<number[]>((resolve, reject) => {
      request.on('error', () => undefined);
      request.on('response', (response) => {
        let events = 0;
        let asked = false;
        response.on('data', (data: Buffer) => {
          events += data.toString().split('data: ').length - 1;
          if (events < 3 || asked) return;
          asked = true;
          // Mid-generation, the class holds the sequence's cache; then the client goes away.
          cached().then((c) => {
            request.destroy();
            resolve(c.sequences);
          }, reject);
        });
      });
      request.end(body);
    });
    expect(during).toHaveLength(1);
    await expect.poll(async () => (await cached()).sequences, { timeout: 10_000 }).toEqual([]);
    const metrics = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    expect(metrics).toMatch(new RegExp(`vllm:request_success_total\\{[^}]*model_name="${CLASS_NAME}"[^}]*finished_reason="abort"[^}]*\\} 1`));
  });

  it("answers Triton's generate extension on /v2 as the folder does", async () => {
    const generate = async (model: string) => (await server.app.inject({ method: 'POST', url: `/v2/models/${model}/generate`, payload: { text_input: 'Triton', parameters: { temperature: 0, max_tokens: 6 } } })).json();
    expect((await generate(CLASS_NAME)).text_output).toBe((await generate(FOLDER_NAME)).text_output);
  });
});
