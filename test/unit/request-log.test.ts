import type { FastifyReply, FastifyRequest } from 'fastify';
import { describe, expect, it } from 'vitest';
import { AccessLogController } from '../../src/server/request-log.js';

/** A reply whose logger records calls and answers isLevelEnabled from `level` (pino's numbers). */
function fakeReply(level: number): { reply: FastifyReply; calls: string[]; elapsedReads: () => number } {
  const calls: string[] = [];
  let reads = 0;
  const levels: Record<string, number> = { info: 30, error: 50 };
  const reply = {
    statusCode: 200,
    get elapsedTime() {
      reads++;
      return 1.25;
    },
    log: {
      isLevelEnabled: (name: string) => levels[name]! >= level,
      info: (line: string) => calls.push(`info ${line}`),
      error: (_obj: unknown, line: string) => calls.push(`error ${line}`),
    },
  } as unknown as FastifyReply;
  return { reply, calls, elapsedReads: () => reads };
}

const request = { method: 'POST', url: '/echo' } as FastifyRequest;

describe('AccessLogController', () => {
  it('writes one line per request at info', () => {
    const { reply, calls } = fakeReply(30);
    new AccessLogController().requestCompleted(null, request, reply);
    expect(calls).toEqual(['info POST /echo 200 1.3 ms']);
  });

  it('builds no line below info, but still logs a failed request', () => {
    const quiet = fakeReply(40);
    const controller = new AccessLogController();
    controller.requestCompleted(null, request, quiet.reply);
    expect(quiet.calls).toEqual([]);
    expect(quiet.elapsedReads()).toBe(0);
    controller.requestCompleted(new Error('boom'), request, quiet.reply);
    expect(quiet.calls).toEqual(['error POST /echo 200 1.3 ms']);
  });
});
