import { readdirSync, readFileSync } from 'node:fs';
import { join, relative, sep } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

/**
 * Lint-style checks over src/ that keep scheduling inside the engine: a request waits for an
 * instance only in a Scheduler registered on an InstanceEngine (docs/architecture.md), and every
 * queue deadline runs on the engine's injectable Clock, so tests drive it and no wall-clock jump
 * expires a queue.
 */

const SRC = fileURLToPath(new URL('../../src', import.meta.url));

function sources(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return sources(path);
    return entry.name.endsWith('.ts') ? [path] : [];
  });
}

const files = sources(SRC).map((path) => ({ path: relative(SRC, path).split(sep).join('/'), text: readFileSync(path, 'utf8') }));

/** The engine's folder, and runtime/ where its files lived before the folders became layers. */
const inEngine = (path: string): boolean => path.startsWith('engine/') || path.startsWith('runtime/');

const lines = (text: string, pattern: RegExp): string[] => text.split('\n').filter((line) => pattern.test(line));

describe('scheduling stays in the engine', () => {
  it('builds DynamicBatchers only in the engine (others ask engine.batcher or engine.streamBatcher)', () => {
    const outside = files.filter((f) => !inEngine(f.path) && /new DynamicBatcher\b/.test(f.text)).map((f) => f.path);
    expect(outside).toEqual([]);
  });

  it('imports the queue internals (LinkedQueue, PriorityQueues) only in the engine', () => {
    const outside = files.filter((f) => !inEngine(f.path) && lines(f.text, /^import\b.*\b(LinkedQueue|PriorityQueues)\b/).length > 0).map((f) => f.path);
    expect(outside).toEqual([]);
  });

  it('times no queue deadline with Date.now(): schedulers and what runs on their Clock use the engine\'s clock', () => {
    // Where requests wait: the engine, its schedulers, what runs on their Clock, and whatever fails a request with a queue timeout.
    const scheduling = files.filter((f) => f.path.startsWith('engine/') || /\bimplements Scheduler\b|\bClock\b|class InstanceEngine\b|'SF_ERR_TIMEOUT'/.test(f.text));
    const uses = scheduling.flatMap((f) => lines(f.text, /Date\.now\(\)/).map((line) => `${f.path}: ${line.trim()}`));
    expect(uses).toEqual([]);
    // The selection still finds the schedulers, so an empty list above means something.
    expect(scheduling.map((f) => f.path.split('/').at(-1))).toEqual(expect.arrayContaining(['sequence-scheduler.ts', 'dynamic-batcher.ts', 'instance-engine.ts', 'sequence-registry.ts']));
  });
});
