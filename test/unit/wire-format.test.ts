import { markAsUntransferable, MessageChannel, type MessagePort } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { callTransferables, collectTransferables, reviveBuffers, tensorCall } from '../../src/wire/wire-format.js';

const ports: MessagePort[] = [];

afterEach(() => {
  for (const port of ports.splice(0)) port.close();
});

/** Sends `value` through a real MessageChannel, the way requests reach a worker. */
function roundTrip<T>(value: T, transfer: ArrayBuffer[]): Promise<T> {
  const { port1, port2 } = new MessageChannel();
  ports.push(port1, port2);
  return new Promise((resolve) => {
    port2.once('message', (received: T) => resolve(received));
    port1.postMessage(value, transfer);
  });
}

describe('collectTransferables', () => {
  it('collects the buffers of views that cover them whole, at any depth and in order', () => {
    const a = new Float32Array(4);
    const b = Buffer.allocUnsafeSlow(16);
    const c = new Uint8Array(8);
    expect(collectTransferables({ payload: { a, nested: [{ b }] }, info: { c } })).toEqual([a.buffer, b.buffer, c.buffer]);
  });

  it("skips pooled Buffers, whose ArrayBuffer is shared with other Buffers", () => {
    const pooled = Buffer.from('hi');
    expect(pooled.byteLength).toBeLessThan(pooled.buffer.byteLength);
    expect(collectTransferables({ pooled })).toEqual([]);
  });

  it('skips partial views and lists a shared buffer once', () => {
    const whole = new Uint8Array(8);
    const half = new Uint8Array(whole.buffer, 0, 4);
    const twice = new Uint16Array(whole.buffer);
    expect(collectTransferables([half])).toEqual([]);
    expect(collectTransferables([whole, twice])).toEqual([whole.buffer]);
  });

  it('never collects a SharedArrayBuffer, which is shared rather than transferred', () => {
    expect(collectTransferables({ view: new Uint8Array(new SharedArrayBuffer(8)) })).toEqual([]);
  });

  it('returns nothing for primitives and stops below depth 8', () => {
    expect(collectTransferables('text')).toEqual([]);
    expect(collectTransferables(null)).toEqual([]);
    let deep: unknown = { leaf: new Uint8Array(4) };
    for (let i = 0; i < 9; i++) deep = { deep };
    expect(collectTransferables(deep)).toEqual([]);
  });

  it('copies a buffer Node marks untransferable (a native addon\'s external output) instead of failing the message', async () => {
    const output = new Float32Array([0.5, 1.5]);
    markAsUntransferable(output.buffer);
    const kept = new Uint8Array([7]);
    const message = { outputs: [output, kept] };
    const received = await roundTrip(message, collectTransferables(message));
    expect([...received.outputs[0]!]).toEqual([0.5, 1.5]);
    expect([...output]).toEqual([0.5, 1.5]);
    expect(kept.byteLength).toBe(0);
  });

  it('moves the bytes to the receiver instead of copying them', async () => {
    const data = new Uint8Array([1, 2, 3, 4]);
    const message = { payload: { data } };
    const received = await roundTrip(message, collectTransferables(message));
    expect(data.byteLength).toBe(0);
    expect([...received.payload.data]).toEqual([1, 2, 3, 4]);
  });
});

describe('callTransferables', () => {
  const info = { requestId: 'r1', params: {}, query: {}, headers: { host: 'local' } };

  it("collects an endpoint call's payload buffers, to the depth the walk over its list reaches", () => {
    const audio = new Uint8Array(8);
    let deep: unknown = { leaf: new Uint8Array(4) };
    for (let i = 0; i < 6; i++) deep = { deep };
    const requests = [{ payload: { audio }, info }, { payload: { deep }, info }];
    const call = { kind: 'endpoint', methodName: 'run', batched: true, requests } as const;
    expect(callTransferables(call)).toEqual(collectTransferables(requests));
    expect(callTransferables(call)).toEqual([audio.buffer]);
  });

  it("walks a tensor call's requests whole", () => {
    const data = new Float32Array(4);
    const call = tensorCall([{ inputs: [{ name: 'x', datatype: 'FP32', shape: [4], data }], outputs: [], parameters: {} } as never]);
    expect(callTransferables(call)).toEqual([data.buffer]);
  });
});

describe('reviveBuffers', () => {
  it('turns Uint8Arrays back into Buffers that view the same memory', () => {
    const bytes = new Uint8Array([7, 8, 9]);
    const revived = reviveBuffers({ file: { data: bytes }, list: [bytes] });
    expect(Buffer.isBuffer(revived.file.data)).toBe(true);
    expect(Buffer.isBuffer(revived.list[0])).toBe(true);
    revived.file.data[0] = 42;
    expect(bytes[0]).toBe(42);
  });

  it('keeps the offset and length of a view into a larger buffer', () => {
    const view = new Uint8Array(new Uint8Array([0, 1, 2, 3, 4]).buffer, 1, 3);
    const revived = reviveBuffers(view);
    expect(Buffer.isBuffer(revived)).toBe(true);
    expect([...revived]).toEqual([1, 2, 3]);
  });

  it('leaves Buffers, other typed arrays and primitives as they are', () => {
    const buffer = Buffer.from([1]);
    const floats = new Float32Array([1.5]);
    expect(reviveBuffers(buffer)).toBe(buffer);
    expect(reviveBuffers(floats)).toBe(floats);
    expect(reviveBuffers('s')).toBe('s');
    expect(reviveBuffers(null)).toBe(null);
  });

  it('restores the Buffers of a request after a real thread-boundary crossing', async () => {
    const file = { filename: 'a.wav', data: Buffer.from(new Uint8Array([5, 6, 7]).buffer) };
    const received = await roundTrip({ payload: { file } }, collectTransferables({ file }));
    expect(Buffer.isBuffer(received.payload.file.data)).toBe(false);
    const revived = reviveBuffers(received);
    expect(Buffer.isBuffer(revived.payload.file.data)).toBe(true);
    expect(revived.payload.file.data.toString('hex')).toBe('050607');
  });
});
