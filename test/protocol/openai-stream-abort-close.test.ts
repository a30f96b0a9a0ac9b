import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import OpenAI from 'openai';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { writeDecoderFolder } from '../fixtures/generation/decoder-folders.js';

/**
 * A streamed generation that the official openai SDK aborts (its `signal` option, an AbortController)
 * must not hold the server's close(): the SDK's fetch (undici) opens a fresh connection on the abort
 * and sends nothing on it, which Node 20's server.close() waited on (src/server/unused-connections.ts).
 */
const root = mkdtempSync(join(tmpdir(), 'serve-fn-stream-abort-'));

beforeAll(() => {
  writeDecoderFolder(join(root, 'qwen3-tiny'));
});
afterAll(() => rmSync(root, { recursive: true, force: true }));

/** Resolves with what `promise` resolved with, or 'timed out' after `ms`. */
function within<T>(promise: Promise<T>, ms: number): Promise<T | 'timed out'> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<'timed out'>((resolve) => (timer = setTimeout(() => resolve('timed out'), ms)));
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

async function abortedStream(route: 'chat' | 'completions'): Promise<ServeFnServer> {
  const server = new ServeFnServer({ models: [], generativeFolders: [join(root, 'qwen3-tiny')], logger: false, collectProcessMetrics: false });
  const address = await server.listen(0, '127.0.0.1');
  const client = new OpenAI({ apiKey: 'unused', baseURL: `${address}/v1`, maxRetries: 0 });
  const abort = new AbortController();
  // ignore_eos and a long max_tokens: the stream is still generating when the client aborts it.
  const body = { model: 'qwen3-tiny', stream: true as const, max_tokens: 200, temperature: 0, ignore_eos: true };
  const stream =
    route === 'chat'
      ? await client.chat.completions.create({ ...body, messages: [{ role: 'user', content: 'Hi' }] }, { signal: abort.signal })
      : await client.completions.create({ ...body, prompt: 'Hi' }, { signal: abort.signal });
  let chunks = 0;
  // The SDK's stream ends quietly when its signal aborts it.
  for await (const _ of stream as AsyncIterable<unknown>) if (++chunks === 2) abort.abort();
  expect(chunks).toBe(2);
  return server;
}

describe('an aborted OpenAI stream', () => {
  for (const route of ['chat', 'completions'] as const) {
    it(`${route}: the server's close() returns after the client aborted`, async () => {
      const server = await abortedStream(route);
      expect(await within(server.close(), 15_000)).toBeUndefined();
    }, 60_000);
  }
});
