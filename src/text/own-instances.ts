import type { InstanceEngine } from '../engine/instance-engine.js';

/**
 * A part of a text model that runs on worker-thread instances of its own — a folder's forward
 * model, a text model's tokenizer — and starts and stops with the server: ready once its instances
 * run and while one is up; stopping finishes what is queued and running first.
 */
export abstract class OwnInstances {
  private started = false;

  protected constructor(readonly engine: InstanceEngine) {}

  ready(): boolean {
    return this.started && this.engine.available;
  }

  async start(): Promise<void> {
    await this.engine.start();
    this.started = true;
  }

  async stop(): Promise<void> {
    this.started = false;
    await this.engine.drain();
    await this.engine.stop();
  }
}
