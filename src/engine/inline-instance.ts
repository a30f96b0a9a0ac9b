import type { ModelContextData } from '../definition/model-context.js';
import { ContextServices, type InferCall } from '../instance/context-services.js';
import { firstTrace, runTraced } from '../instance/caller-trace.js';
import type { ModelDefinition } from '../definition/model-definition.js';
import { ModelHost } from '../instance/model-host.js';
import type { ModelLogger } from '../instance/instance-logger.js';
import type { TokenizerFileVocabulary } from '../wire/decoder-step-call.js';
import type { ModelInstance } from './model-instance.js';
import { SocketLink, type SocketSession } from '../wire/socket-session.js';
import { StreamChannel } from '../wire/stream-channel.js';
import type { ExecuteCall, ExecuteOutcome, OnResult, SocketCall, StreamCall } from '../wire/wire-format.js';

/**
 * A model instance on the HTTP thread, for `@Instances(n, { inline: true })` models that only do
 * async I/O. Anything CPU-bound here would stall every request, hence worker threads by default.
 */
export class InlineInstance implements ModelInstance {
  private host?: ModelHost;
  private readonly services: ContextServices;

  constructor(
    readonly index: number,
    private readonly definition: ModelDefinition,
    context: ModelContextData,
    infer: InferCall,
    logger?: ModelLogger,
    /** A @GenerativeModel class's: where its grammar engine reads its vocabulary (ModelHost.create). */
    private readonly grammarVocabulary?: TokenizerFileVocabulary,
  ) {
    this.services = new ContextServices(context, infer, logger);
  }

  async start(): Promise<void> {
    const host = ModelHost.create(this.definition, undefined, this.grammarVocabulary);
    await host.initialize(this.services.context);
    this.host = host;
  }

  execute(call: ExecuteCall, onResult?: OnResult): Promise<ExecuteOutcome> {
    if (!this.host) throw new Error(`instance ${this.index} of ${this.definition.name} is not started`);
    return this.host.execute(structuredClone(call), onResult);
  }

  openStream(call: StreamCall, credit: number): StreamChannel {
    if (!this.host) throw new Error(`instance ${this.index} of ${this.definition.name} is not started`);
    const channel = new StreamChannel({ grant: (units) => pump.grant(units), cancel: () => pump.cancel() });
    const pump = this.host.openStream(structuredClone(call), credit, (event) => channel.push(event));
    void runTraced(firstTrace(call), () => pump.run());
    return channel;
  }

  openSocket(call: SocketCall, credit: number): SocketLink {
    if (!this.host) throw new Error(`instance ${this.index} of ${this.definition.name} is not started`);
    const link: SocketLink = new SocketLink(
      {
        grant: (units) => session.grant(units),
        cancel: () => session.cancel(),
        deliver: (input) => session.deliver(structuredClone(input)),
        endInput: () => session.endInput(),
      },
      this.index,
    );
    const session: SocketSession = this.host.openSocket(structuredClone(call), credit, (event) => link.output.push(event), () => link.taken(1));
    void runTraced(call.traceparent, () => session.run());
    return link;
  }

  async stop(): Promise<void> {
    try {
      await this.host?.finalize();
    } finally {
      this.host = undefined;
      await this.services.dispose();
    }
  }
}
