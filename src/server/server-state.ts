/**
 * Where the server is in its life; readiness and request admission read it. `terminating` is the
 * shutdown delay: readiness fails so load balancers stop routing here, but requests are still served.
 */
export type Phase = 'starting' | 'ready' | 'terminating' | 'draining' | 'stopped';

export class ServerState {
  private current: Phase = 'starting';

  /** `unavailable` names a model that cannot serve now (every instance lost), or gives undefined. */
  constructor(private readonly unavailable: () => string | undefined = () => undefined) {}

  get phase(): Phase {
    return this.current;
  }

  /** Whether requests are admitted: from start-up until the drain begins, through the shutdown delay. */
  get ready(): boolean {
    return this.current === 'ready' || this.current === 'terminating';
  }

  /** Why a readiness probe fails (the phase, or a model that cannot serve), or undefined when it passes. */
  notReadyReason(): string | undefined {
    return this.current === 'ready' ? this.unavailable() : this.current;
  }

  set(phase: Phase): void {
    this.current = phase;
  }
}
