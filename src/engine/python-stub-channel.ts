import { closeSync, existsSync, openSync, readdirSync, readSync, rmSync, writeSync, fstatSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable, Writable } from 'node:stream';
import { tensorFromBytes, tensorToBytes } from '../tensor/binary-codec.js';
import type { Tensor } from '../spec/tensor.js';
import { STUB_SHM_THRESHOLD, STUB_TENSOR_ALIGN, type FromStub, type StubTensorRef, type ToStub } from '../wire/python-stub-messages.js';

/** Where shared-memory files go: tmpfs at /dev/shm on Linux, the temp folder elsewhere. */
export const STUB_SHM_DIR = existsSync('/dev/shm') ? '/dev/shm' : tmpdir();

/** A message as read: its header and where its tensors lie (the payload, or its shared-memory file read whole). */
export interface ReceivedFrame {
  readonly message: FromStub;
  readonly tensors: Uint8Array;
}

/**
 * serve-fn's end of a stub process's two pipes (src/wire/python-stub-messages.ts): writes frames,
 * splits the incoming byte stream into frames, and lays tensors out in a frame's payload or in a
 * shared-memory file. Node has no mmap, so a shared-memory file is written and read with one
 * positioned write / read per message (tmpfs: a memory copy, no disk); the stub maps it.
 */
export class StubChannel {
  private pending: Buffer[] = [];
  private pendingBytes = 0;
  private fileCount = 0;

  constructor(
    private readonly toStub: Writable,
    fromStub: Readable,
    /** Names this channel's shared-memory files, so a dead stub's leftovers can be removed (removeLeftovers). */
    private readonly shmPrefix: string,
    onFrame: (frame: ReceivedFrame) => void,
  ) {
    fromStub.on('data', (chunk: Buffer) => {
      this.pending.push(chunk);
      this.pendingBytes += chunk.length;
      for (let frame = this.nextFrame(); frame; frame = this.nextFrame()) onFrame(frame);
    });
  }

  /** Sends `message` with `tensorLists`' tensors laid out after it; returns each list's references. */
  send(message: (refs: StubTensorRef[][]) => ToStub, tensorLists: readonly (readonly Tensor[])[] = []): void {
    const blobs: { offset: number; bytes: Uint8Array }[] = [];
    const refs: StubTensorRef[][] = [];
    let size = 0;
    for (const tensors of tensorLists) {
      refs.push(tensors.map((tensor) => {
        const bytes = tensorToBytes(tensor);
        const ref = { name: tensor.name, datatype: tensor.datatype, shape: tensor.shape, offset: size, size: bytes.byteLength };
        blobs.push({ offset: size, bytes });
        size += Math.ceil(bytes.byteLength / STUB_TENSOR_ALIGN) * STUB_TENSOR_ALIGN;
        return ref;
      }));
    }
    if (size <= STUB_SHM_THRESHOLD) {
      const payload = Buffer.alloc(size);
      for (const { offset, bytes } of blobs) payload.set(bytes, offset);
      this.write(message(refs), payload);
      return;
    }
    const path = join(STUB_SHM_DIR, `${this.shmPrefix}-js-${++this.fileCount}`);
    const fd = openSync(path, 'w', 0o600);
    try {
      for (const { offset, bytes } of blobs) writeSync(fd, bytes, 0, bytes.byteLength, offset);
    } finally {
      closeSync(fd);
    }
    this.write({ ...message(refs), shm: path } as ToStub, Buffer.alloc(0));
  }

  /** Removes shared-memory files a dead stub left: ones it never read, and ones it wrote that were never read. */
  removeLeftovers(): void {
    for (const name of readdirSync(STUB_SHM_DIR)) if (name.startsWith(`${this.shmPrefix}-`)) rmSync(join(STUB_SHM_DIR, name), { force: true });
  }

  private write(header: ToStub, payload: Buffer): void {
    const json = Buffer.from(JSON.stringify(header));
    const head = Buffer.alloc(8);
    head.writeUInt32LE(json.length, 0);
    head.writeUInt32LE(payload.length, 4);
    this.toStub.write(payload.length > 0 ? Buffer.concat([head, json, payload]) : Buffer.concat([head, json]));
  }

  private nextFrame(): ReceivedFrame | undefined {
    if (this.pendingBytes < 8) return undefined;
    const all = this.pending.length === 1 ? this.pending[0] : Buffer.concat(this.pending);
    this.pending = [all];
    const headerLength = all.readUInt32LE(0);
    const payloadLength = all.readUInt32LE(4);
    const end = 8 + headerLength + payloadLength;
    if (all.length < end) return undefined;
    const message = JSON.parse(all.subarray(8, 8 + headerLength).toString('utf8')) as FromStub;
    // A copy at offset 0 of its own memory: the tensors' views over it are aligned, and outlive the chunk.
    const payload = new Uint8Array(all.subarray(8 + headerLength, end));
    const rest = all.subarray(end);
    this.pending = rest.length > 0 ? [rest] : [];
    this.pendingBytes = rest.length;
    const shm = (message as { shm?: string }).shm;
    return { message, tensors: shm ? readShared(shm) : payload };
  }
}

/** Reads a shared-memory file the stub wrote, whole, into memory of its own, and removes it. */
function readShared(path: string): Uint8Array {
  const fd = openSync(path, 'r');
  try {
    const out = new Uint8Array(fstatSync(fd).size);
    for (let at = 0; at < out.byteLength; ) {
      const read = readSync(fd, out, at, out.byteLength - at, at);
      if (read === 0) break;
      at += read;
    }
    return out;
  } finally {
    closeSync(fd);
    rmSync(path, { force: true });
  }
}

/** The tensors `refs` name in a received message's tensor bytes. */
export function tensorsOf(refs: readonly StubTensorRef[], bytes: Uint8Array): Tensor[] {
  return refs.map((ref) => tensorFromBytes(ref.name, ref.datatype, ref.shape, bytes.subarray(ref.offset, ref.offset + ref.size)));
}
