import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { STUB_SHM_DIR, StubChannel, tensorsOf, type ReceivedFrame } from '../../src/engine/python-stub-channel.js';
import { createTensor } from '../../src/tensor/tensor-factory.js';
import { STUB_SHM_THRESHOLD, type StubTensorRef, type ToStub } from '../../src/wire/python-stub-messages.js';

/** A channel whose frames to the stub are captured, and one fed the same bytes as if the stub sent them. */
function pair(prefix: string): { sent: PassThrough; received: ReceivedFrame[]; feed: (bytes: Buffer) => void; channel: StubChannel } {
  const sent = new PassThrough();
  const incoming = new PassThrough();
  const received: ReceivedFrame[] = [];
  const channel = new StubChannel(sent, incoming, prefix, (frame) => received.push(frame));
  return { sent, received, feed: (bytes) => incoming.write(bytes), channel };
}

const tick = (): Promise<void> => new Promise((r) => setImmediate(r));

describe('StubChannel', () => {
  it('frames a message with its tensors in the payload: u32 header length, u32 payload length, JSON, 64-byte aligned bytes', async () => {
    const { sent, channel } = pair(`sf-test-${process.pid}-a`);
    let refs: StubTensorRef[][] = [];
    channel.send((r) => ((refs = r), { type: 'execute', id: 1, model: 'm', requests: [{ inputs: r[0], outputs: [], parameters: {} }] }) as ToStub, [[
      createTensor('X', 'FP32', [2], new Float32Array([1.5, 2])),
      createTensor('S', 'BYTES', [1], [Buffer.from('hé')]),
    ]]);
    const bytes = sent.read() as Buffer;
    const headerLength = bytes.readUInt32LE(0);
    const payloadLength = bytes.readUInt32LE(4);
    expect(JSON.parse(bytes.subarray(8, 8 + headerLength).toString()).type).toBe('execute');
    expect(refs[0]).toEqual([
      { name: 'X', datatype: 'FP32', shape: [2], offset: 0, size: 8 },
      { name: 'S', datatype: 'BYTES', shape: [1], offset: 64, size: 7 },
    ]);
    expect(payloadLength).toBe(128);
    const payload = bytes.subarray(8 + headerLength);
    expect(Array.from(new Float32Array(payload.buffer.slice(payload.byteOffset, payload.byteOffset + 8)))).toEqual([1.5, 2]);
    expect([payload.readUInt32LE(64), payload.subarray(68, 71).toString()]).toEqual([3, 'hé']);
  });

  it('puts tensors over the threshold in a shared-memory file the header names', () => {
    const prefix = `sf-test-${process.pid}-b`;
    const { sent, channel } = pair(prefix);
    const big = new Float32Array(STUB_SHM_THRESHOLD / 4 + 1).fill(3);
    channel.send((r) => ({ type: 'execute', id: 2, model: 'm', requests: [{ inputs: r[0], outputs: [], parameters: {} }] }), [[createTensor('X', 'FP32', [big.length], big)]]);
    const bytes = sent.read() as Buffer;
    expect(bytes.readUInt32LE(4)).toBe(0);
    const header = JSON.parse(bytes.subarray(8).toString()) as { shm: string };
    expect(header.shm.startsWith(join(STUB_SHM_DIR, prefix))).toBe(true);
    expect(new Float32Array(readFileSync(header.shm).buffer.slice(0, big.byteLength))).toEqual(big);
    channel.removeLeftovers();
    expect(existsSync(header.shm)).toBe(false);
  });

  it('reassembles frames split across chunks and several frames in one chunk, reading tensors from the payload', async () => {
    const { received, feed } = pair(`sf-test-${process.pid}-c`);
    const frame = (id: number, data: Float32Array): Buffer => {
      const header = Buffer.from(JSON.stringify({ type: 'responses', id, responses: [{ outputs: [{ name: 'Y', datatype: 'FP32', shape: [data.length], offset: 0, size: data.byteLength }] }] }));
      const head = Buffer.alloc(8);
      head.writeUInt32LE(header.length, 0);
      head.writeUInt32LE(data.byteLength, 4);
      return Buffer.concat([head, header, Buffer.from(data.buffer)]);
    };
    const both = Buffer.concat([frame(1, new Float32Array([1, 2])), frame(2, new Float32Array([3]))]);
    feed(both.subarray(0, 5));
    await tick();
    expect(received).toHaveLength(0);
    feed(both.subarray(5));
    await tick();
    expect(received.map((f) => f.message.type === 'responses' && f.message.id)).toEqual([1, 2]);
    const [first] = received;
    const refs = first.message.type === 'responses' && 'outputs' in first.message.responses[0] ? first.message.responses[0].outputs : [];
    expect(Array.from(tensorsOf(refs, first.tensors)[0].data as Float32Array)).toEqual([1, 2]);
  });

  it('leaves no file of its prefix behind after removeLeftovers', () => {
    const prefix = `sf-test-${process.pid}-d`;
    const { channel } = pair(prefix);
    const big = new Uint8Array(STUB_SHM_THRESHOLD + 1);
    channel.send((r) => ({ type: 'execute', id: 3, model: 'm', requests: [{ inputs: r[0], outputs: [], parameters: {} }] }), [[createTensor('X', 'UINT8', [big.length], big)]]);
    expect(readdirSync(STUB_SHM_DIR).some((f) => f.startsWith(prefix))).toBe(true);
    channel.removeLeftovers();
    expect(readdirSync(STUB_SHM_DIR).some((f) => f.startsWith(prefix))).toBe(false);
  });
});
