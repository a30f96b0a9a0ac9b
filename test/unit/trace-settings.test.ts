import { describe, expect, it } from 'vitest';
import type { RequestTrace } from '../../src/tracing/request-tracing.js';
import { TraceSettings } from '../../src/tracing/trace-settings.js';

const trace = {} as RequestTrace;
/** How many of `n` requests to `model` get their model's spans. */
const admitted = (settings: TraceSettings, model: string, n: number): number => Array.from({ length: n }, () => settings.admit(model, trace)).filter(Boolean).length;

describe('TraceSettings.admit', () => {
  it('admits every traced request by default once tracing is on, none while it is off or untraced', () => {
    expect(admitted(new TraceSettings(true), 'm', 5)).toBe(5);
    expect(admitted(new TraceSettings(false), 'm', 5)).toBe(0);
    expect(new TraceSettings(true).admit('m', undefined)).toBeUndefined();
  });

  it('samples 1 in trace_rate requests', () => {
    const settings = new TraceSettings(true);
    settings.update(undefined, { trace_rate: '4' });
    expect(admitted(settings, 'm', 12)).toBe(3);
  });

  it('stops after trace_count traced requests, counting down as Triton reports it', () => {
    const settings = new TraceSettings(true);
    settings.update('m', { trace_count: '2' });
    expect(admitted(settings, 'm', 5)).toBe(2);
    expect(settings.get('m').trace_count).toBe('0');
    // Other models follow the global settings, which have no cap.
    expect(admitted(settings, 'other', 5)).toBe(5);
  });

  it("turns one model's spans off with trace_level OFF", () => {
    const settings = new TraceSettings(true);
    settings.update('quiet', { trace_level: ['OFF'] });
    expect(admitted(settings, 'quiet', 3)).toBe(0);
    expect(admitted(settings, 'loud', 3)).toBe(3);
  });
});
