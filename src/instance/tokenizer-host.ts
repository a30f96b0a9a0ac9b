import type { ModelContext } from '../definition/model-context.js';
import { createError, serializeError } from '../errors/index.js';
import { TextTokenizer } from '../tokenizer/tokenizer.js';
import { StreamPump, type StreamEvent } from '../wire/stream-channel.js';
import type { TokenizerPlan } from '../wire/tensor-model-plan.js';
import type { ExecuteCall, ExecuteOutcome, StreamCall, WireResult } from '../wire/wire-format.js';
import { timedExecution, type InstanceHost } from './instance-host.js';

/**
 * The instance host of a text model's tokenizer inside its worker thread, as TEI's router encodes on
 * tokenization workers of their own (core/src/tokenization.rs) rather than on the thread that serves
 * HTTP: the library's native encode runs on libuv's pool either way, but what follows it in
 * JavaScript (post-processing, truncation, reading ids out of the library) takes ~0.3 ms a 500-token
 * text, and a 32-text request would hold the HTTP thread for 10–30 ms. Each text of a call is encoded
 * concurrently and answered on its own, so one bad text fails only its request.
 */
export class TokenizerHost implements InstanceHost {
  private constructor(
    private readonly tokenizer: TextTokenizer,
    private readonly modelName: string,
  ) {}

  static async start(plan: TokenizerPlan, ctx: ModelContext): Promise<TokenizerHost> {
    return new TokenizerHost(await TextTokenizer.fromFile(plan.file), ctx.modelName);
  }

  execute(call: ExecuteCall): Promise<ExecuteOutcome> {
    if (call.kind !== 'tokenize') throw this.tokenizesOnly(call.kind === 'endpoint' ? call.methodName : call.kind);
    return timedExecution(() => Promise.all(call.texts.map(({ first, second, options }): Promise<WireResult> => {
      const encoding = second === undefined ? this.tokenizer.encode(first, options) : this.tokenizer.encodePair(first, second, options);
      return encoding.then((value) => ({ ok: true, value }), (err: unknown) => ({ ok: false, error: serializeError(err) }));
    })));
  }

  openStream(call: StreamCall, credit: number, emit: (event: StreamEvent) => void): StreamPump {
    return new StreamPump(() => Promise.reject(this.tokenizesOnly(call.kind === 'endpoint' ? call.methodName : call.kind)), credit, emit);
  }

  finalize(): Promise<void> {
    return Promise.resolve();
  }

  private tokenizesOnly(what: string): Error {
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, what, "a text model's tokenizer instance encodes texts only");
  }
}
