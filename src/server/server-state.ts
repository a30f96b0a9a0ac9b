/** Where the server is in its life; readiness and request admission read it. */
export type Phase = 'starting' | 'ready' | 'draining' | 'stopped';

export class ServerState {
  private current: Phase = 'starting';

  get phase(): Phase {
    return this.current;
  }

  get ready(): boolean {
    return this.current === 'ready';
  }

  set(phase: Phase): void {
    this.current = phase;
  }
}
