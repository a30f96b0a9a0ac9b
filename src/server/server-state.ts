/** Where the server is in its life; readiness and request admission read it. */
export type Phase = 'starting' | 'ready' | 'draining' | 'stopped';

export class ServerState {
  private current: Phase = 'starting';

  /** `unavailable` names a model that cannot serve now (every instance lost), or gives undefined. */
  constructor(private readonly unavailable: () => string | undefined = () => undefined) {}

  get phase(): Phase {
    return this.current;
  }

  /** Whether requests are admitted: between start-up and drain. */
  get ready(): boolean {
    return this.current === 'ready';
  }

  /** Why a readiness probe fails (the phase, or a model that cannot serve), or undefined when it passes. */
  notReadyReason(): string | undefined {
    return this.ready ? this.unavailable() : this.current;
  }

  set(phase: Phase): void {
    this.current = phase;
  }
}
