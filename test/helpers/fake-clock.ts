import type { Clock } from '../../src/engine/clock.js';
import { settle } from './settle.js';

/** Manual clock: `advance` fires due timers in due order (ties in arming order), settling promises after each. */
export class FakeClock implements Clock {
  private time = 0;
  private nextId = 0;
  private readonly timers = new Map<number, { atUs: number; fn: () => void }>();

  now(): number {
    return this.time;
  }

  setTimer(fn: () => void, delayUs: number): unknown {
    this.nextId++;
    this.timers.set(this.nextId, { atUs: this.time + delayUs, fn });
    return this.nextId;
  }

  clearTimer(handle: unknown): void {
    this.timers.delete(handle as number);
  }

  get armed(): number {
    return this.timers.size;
  }

  async advance(us: number): Promise<void> {
    const end = this.time + us;
    for (;;) {
      let due: [number, { atUs: number; fn: () => void }] | undefined;
      for (const timer of this.timers) if (timer[1].atUs <= end && (!due || timer[1].atUs < due[1].atUs)) due = timer;
      if (!due) break;
      this.timers.delete(due[0]);
      this.time = Math.max(this.time, due[1].atUs);
      due[1].fn();
      await settle();
    }
    this.time = end;
    await settle();
  }
}
