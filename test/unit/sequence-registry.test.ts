import { describe, expect, it } from 'vitest';
import { SequenceRegistry } from '../../src/engine/sequence-registry.js';
import { FakeClock } from '../helpers/fake-clock.js';
import { thrown } from '../helpers/thrown.js';

function setup(laneCount = 2, idleUs = 1_000_000) {
  const clock = new FakeClock();
  const logs: string[] = [];
  const registry = new SequenceRegistry({ modelName: 'acc', laneCount, idleUs, clock, log: (level, message) => logs.push(`${level}: ${message}`) });
  return { clock, logs, registry };
}

const NOT_STARTED = (id: string | number): string =>
  `inference request for sequence ${id} to model 'acc' must specify the START flag on the first request of the sequence (the sequence is unknown, has ended, or was freed after 1000000 µs idle)`;

describe('SequenceRegistry', () => {
  it('binds a starting sequence to the instance with the fewest live sequences and keeps it there', () => {
    const { registry } = setup(3);
    expect(registry.route({ id: 1, start: true, end: false }).lane).toBe(0);
    expect(registry.route({ id: 2, start: true, end: false }).lane).toBe(1);
    expect(registry.route({ id: 3, start: true, end: false }).lane).toBe(2);
    expect(registry.route({ id: 1, start: false, end: false }).lane).toBe(0);
    expect(registry.route({ id: 'x', start: true, end: false }).lane).toBe(0);
    expect(registry.liveCounts).toEqual([2, 1, 1]);
    expect(registry.route({ id: 2, start: false, end: true }).lane).toBe(1);
    expect(registry.liveCounts).toEqual([2, 0, 1]);
    expect(registry.route({ id: 4, start: true, end: false }).lane).toBe(1);
    expect(registry.route({ id: 3, start: false, end: false }).lane).toBe(2);
  });

  it('reports the correlation id, the flags and one key per sequence', () => {
    const { registry } = setup();
    const first = registry.route({ id: 'abc', start: true, end: false });
    const last = registry.route({ id: 'abc', start: false, end: true });
    expect([first.correlationId, first.start, first.end]).toEqual(['abc', true, false]);
    expect([last.correlationId, last.start, last.end]).toEqual(['abc', false, true]);
    expect(first.key).toBe(last.key);
  });

  it('tells the uint64 id 7 from the string id "7", as Triton does', () => {
    const { registry } = setup();
    registry.route({ id: 7, start: true, end: false });
    expect(thrown(() => registry.route({ id: '7', start: false, end: false })).message).toBe(NOT_STARTED('7'));
    expect(registry.route({ id: '7', start: true, end: false }).lane).toBe(1);
  });

  it('refuses a request without a correlation id (absent, 0 or empty) with Triton\'s 400', () => {
    const { registry } = setup();
    for (const id of [undefined, 0, '']) {
      const err = thrown(() => registry.route({ ...(id === undefined ? {} : { id }), start: true, end: false }));
      expect([err.code, err.statusCode, err.message]).toEqual([
        'SF_ERR_SEQUENCE_ID_MISSING', 400, "inference request to model 'acc' must specify a non-zero or non-empty correlation ID",
      ]);
    }
  });

  it('refuses a request for an unknown sequence that does not START', () => {
    const { registry } = setup();
    const err = thrown(() => registry.route({ id: 42, start: false, end: false }));
    expect([err.code, err.statusCode, err.message]).toEqual(['SF_ERR_SEQUENCE_NOT_STARTED', 400, NOT_STARTED(42)]);
    expect(registry.liveCounts).toEqual([0, 0]);
  });

  it('refuses a request for a sequence that has ended', () => {
    const { registry } = setup();
    registry.route({ id: 5, start: true, end: false });
    registry.route({ id: 5, start: false, end: true });
    expect(thrown(() => registry.route({ id: 5, start: false, end: false })).message).toBe(NOT_STARTED(5));
    expect(registry.liveCounts).toEqual([0, 0]);
  });

  it('serves a one-request sequence (START and END together) without keeping it', () => {
    const { registry, clock } = setup();
    const route = registry.route({ id: 9, start: true, end: true });
    expect([route.lane, route.start, route.end]).toEqual([0, true, true]);
    route.done();
    expect(registry.liveCounts).toEqual([0, 0]);
    expect(clock.armed).toBe(0);
  });

  it('releases a sequence idle for max_sequence_idle_microseconds after its last request settled', async () => {
    const { registry, clock, logs } = setup();
    registry.route({ id: 1, start: true, end: false }).done();
    await clock.advance(999_999);
    const again = registry.route({ id: 1, start: false, end: false });
    again.done();
    await clock.advance(999_999);
    expect(registry.liveCounts).toEqual([1, 0]);
    await clock.advance(1);
    expect(registry.liveCounts).toEqual([0, 0]);
    expect(logs).toEqual(["info: sequence 1 of model 'acc' was idle for 1000000 µs and is released"]);
    expect(thrown(() => registry.route({ id: 1, start: false, end: false })).code).toBe('SF_ERR_SEQUENCE_NOT_STARTED');
  });

  it('does not release a sequence while one of its requests is still pending', async () => {
    const { registry, clock } = setup();
    const running = registry.route({ id: 1, start: true, end: false });
    await clock.advance(5_000_000);
    expect(registry.liveCounts).toEqual([1, 0]);
    running.done();
    running.done();
    await clock.advance(999_999);
    expect(registry.route({ id: 1, start: false, end: false }).lane).toBe(0);
  });

  it('keeps the instance of a live id that STARTs again and logs Triton\'s conflict warning', () => {
    const { registry, logs } = setup();
    registry.route({ id: 1, start: true, end: false });
    registry.route({ id: 2, start: true, end: false });
    const restarted = registry.route({ id: 2, start: true, end: false });
    expect([restarted.lane, restarted.start]).toEqual([1, true]);
    expect(registry.liveCounts).toEqual([1, 1]);
    expect(logs).toEqual([
      "warn: sequence 2 for model 'acc' has a conflict. The previous sequence did not end before this sequence start. Previous sequence will be terminated early.",
    ]);
  });

  it('a request that settles after its sequence ended and restarted leaves the new sequence alone', async () => {
    const { registry, clock } = setup();
    const old = registry.route({ id: 1, start: true, end: true });
    const fresh = registry.route({ id: 1, start: true, end: false });
    old.done();
    await clock.advance(2_000_000);
    expect(registry.liveCounts).toEqual([1, 0]);
    fresh.done();
    await clock.advance(1_000_000);
    expect(registry.liveCounts).toEqual([0, 0]);
  });

  it('forgets the sequences of an instance that went down, starts new ones elsewhere until it is up, and close() stops every timer', () => {
    const { registry, clock } = setup();
    registry.route({ id: 1, start: true, end: false }).done();
    registry.route({ id: 2, start: true, end: false }).done();
    registry.route({ id: 3, start: true, end: false }).done();
    expect(registry.laneDown(0)).toBe(2);
    expect(registry.liveCounts).toEqual([0, 1]);
    expect(thrown(() => registry.route({ id: 3, start: false, end: false })).code).toBe('SF_ERR_SEQUENCE_NOT_STARTED');
    const whileDown = registry.route({ id: 4, start: true, end: false });
    whileDown.done();
    expect(whileDown.lane).toBe(1);
    registry.laneUp(0);
    expect(registry.route({ id: 5, start: true, end: false }).lane).toBe(0);
    registry.close();
    expect(registry.liveCounts).toEqual([0, 0]);
    expect(clock.armed).toBe(0);
  });
});
