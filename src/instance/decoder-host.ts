import type { ModelContext } from '../definition/model-context.js';
import { createError } from '../errors/index.js';
import type { DecoderRuntime } from '../spec/decoder-step.js';
import type { ConstraintVocabulary } from '../spec/structured-output.js';
import type { DecoderPlan } from '../wire/decoder-step-call.js';
import { StreamPump, type StreamEvent } from '../wire/stream-channel.js';
import type { ExecuteCall, ExecuteOutcome } from '../wire/wire-format.js';
import { tokenizerFileVocabulary } from './constraint-vocabulary.js';
import { DecoderSteps } from './decoder-steps.js';
import { timedExecution, type InstanceHost } from './instance-host.js';
import { decoderLayout, OnnxDecoderRuntime } from './onnx-decoder-runtime.js';

/**
 * The instance host of a generator inside its worker thread: a decoder runtime holding every
 * running sequence's KV cache, fed one scheduler iteration per call (decoder-step-call.ts) and
 * answering one sampled token per row (decoder-steps.ts).
 */
export class DecoderHost implements InstanceHost {
  private readonly steps: DecoderSteps;

  constructor(
    runtime: DecoderRuntime,
    private readonly modelName: string,
    private readonly dispose: () => Promise<void> = () => Promise.resolve(),
    vocabulary?: () => Promise<ConstraintVocabulary>,
  ) {
    this.steps = new DecoderSteps(runtime, vocabulary);
  }

  /**
   * A decoder folder's model.onnx on ONNX Runtime, opened through ctx.loadModel (disposed after
   * finalize), or a GGUF file on llama.cpp (its model and context disposed by finalize). The grammar
   * engine's vocabulary is the folder's tokenizer.json or the GGUF's token list, read on first use.
   */
  static async start(plan: DecoderPlan, ctx: ModelContext): Promise<DecoderHost> {
    if (plan.runtime === 'gguf') {
      // Imported on the first GGUF served: it imports node-llama-cpp, an optional peer, in turn.
      const { createGgufRuntime } = await import('./gguf-runtime.js');
      const runtime = await createGgufRuntime(plan.file, { maxNumSeqs: plan.maxNumSeqs, maxModelLen: plan.maxModelLen, maxNumBatchedTokens: plan.maxNumBatchedTokens });
      return new DecoderHost(runtime, ctx.modelName, () => runtime.dispose(), async () => runtime.constraintVocabulary());
    }
    const session = await ctx.loadModel(plan.file, { options: plan.sessionOptions });
    const { inputs, outputs } = session.metadata();
    const runtime = new OnnxDecoderRuntime(decoderLayout(ctx.modelName, inputs, outputs, plan.vocabSize), (feeds, names) => session.run(feeds, names));
    return new DecoderHost(runtime, ctx.modelName, undefined, tokenizerFileVocabulary(plan.grammarVocabulary));
  }

  execute(call: ExecuteCall): Promise<ExecuteOutcome> {
    if (call.kind !== 'decoder-step') throw this.stepsOnly(call.kind === 'endpoint' ? call.methodName : call.kind);
    return timedExecution(async () => (await this.steps.run(call)).map((value) => ({ ok: true as const, value })));
  }

  openStream(call: ExecuteCall, credit: number, emit: (event: StreamEvent) => void): StreamPump {
    return new StreamPump(() => Promise.reject(this.stepsOnly(call.kind === 'endpoint' ? call.methodName : call.kind)), credit, emit);
  }

  finalize(): Promise<void> {
    return this.dispose();
  }

  private stepsOnly(what: string): Error {
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, what, "a generator's instance runs decoder steps only");
  }
}
