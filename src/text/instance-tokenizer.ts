import { pathToFileURL } from 'node:url';
import type { ModelContextData } from '../definition/model-context.js';
import { deserializeError } from '../errors/index.js';
import type { BatchEntry, DynamicBatcher } from '../engine/dynamic-batcher.js';
import { InstanceEngine } from '../engine/instance-engine.js';
import type { RequestClock } from '../engine/request-accounting.js';
import { WorkerInstance } from '../engine/worker-instance.js';
import { OwnInstances } from './own-instances.js';
import { InferenceRecorder } from '../metrics/inference-recorder.js';
import type { VersionBuilderContext } from '../model-repository/model-version-builder.js';
import { normalizeBatchPolicy } from '../spec/batch-policy.js';
import type { CancelSignal } from '../spec/cancel-signal.js';
import type { EncodeOptions, TextEncoding, TextTokenization, TextTokenizer } from '../tokenizer/tokenizer.js';
import { now } from '../wire/epoch-time.js';
import type { TokenizeText } from '../wire/wire-format.js';

interface QueuedText extends RequestClock {
  readonly text: TokenizeText;
}

/** Texts one call to the tokenizer instance carries at most: a few client batches' worth. */
const TEXTS_PER_CALL = 256;

/**
 * A text model folder's tokenizer on a worker-thread instance of its own, as TEI's router runs its
 * tokenizer on tokenization workers: texts queue on the instance's engine (a batcher that hands the
 * texts queued meanwhile to the instance in one call, queued behind the running one so the instance
 * never waits on a round trip) and come back as encodings, so the HTTP thread spends nothing on
 * encoding. What is rare and small — vocabulary lookups, decoding ids — is answered by the same
 * tokenizer loaded on this thread.
 */
export class InstanceTokenizer extends OwnInstances implements TextTokenization {
  private readonly batcher: DynamicBatcher<QueuedText, TextEncoding>;

  constructor(
    private readonly local: TextTokenizer,
    file: string,
    context: ModelContextData,
    builder: VersionBuilderContext,
  ) {
    const name = `${context.modelName} tokenizer`;
    const plan = { kind: 'tokenizer', file } as const;
    super(new InstanceEngine({
      name, version: context.modelVersion, instanceCount: 1,
      // Its executions are not the model's: nv_* statistics stay the forward model's alone.
      recorder: new InferenceRecorder({ collectProcessMetrics: false }),
      log: builder.log, restartPolicy: builder.restartPolicy,
      factory: (index, events) => new WorkerInstance(index, pathToFileURL(file).href, { ...context, instanceName: `${context.modelName}_tokenizer` }, events, builder.infer, plan, builder.logger),
    }));
    this.batcher = this.engine.batcher(name, normalizeBatchPolicy({ maxBatchSize: TEXTS_PER_CALL, maxQueueDelayUs: 0 }, name), (batch) => this.run(batch), { queueBehind: true });
  }

  get vocabSize(): number {
    return this.local.vocabSize;
  }

  get padId(): number {
    return this.local.padId;
  }

  specialTokenCount(pair: boolean): number {
    return this.local.specialTokenCount(pair);
  }

  encode(text: string, options: EncodeOptions = {}, signal?: CancelSignal): Promise<TextEncoding> {
    return this.engine.submit(this.batcher, { text: { first: text, options }, submittedMs: now() }, { signal });
  }

  encodePair(first: string, second: string, options: EncodeOptions = {}, signal?: CancelSignal): Promise<TextEncoding> {
    return this.engine.submit(this.batcher, { text: { first, second, options }, submittedMs: now() }, { signal });
  }

  decode(ids: readonly number[], skipSpecialTokens: boolean): Promise<string> {
    return this.local.decode(ids, skipSpecialTokens);
  }

  idToToken(id: number): string | undefined {
    return this.local.idToToken(id);
  }

  private async run(batch: readonly BatchEntry<QueuedText>[]): Promise<(TextEncoding | Error)[]> {
    const queued = batch.map((entry) => entry.payload);
    const outcome = await this.engine.runBatch(queued, (instance) => instance.execute({ kind: 'tokenize', texts: queued.map((q) => q.text) }));
    return outcome.results.map((result) => (result.ok ? (result.value as TextEncoding) : deserializeError(result.error)));
  }
}
