/**
 * Writes GGUF files for tests and benchmarks: the format llama.cpp reads
 * (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md, version 3): a header, typed
 * metadata key/values, tensor infos, then the tensor data aligned to `general.alignment`.
 * Hand-written because no npm package writes GGUF (the `@huggingface/gguf` family only reads);
 * only what the fixtures need: F32 tensors and the scalar, string and array value types.
 */
import { writeFileSync } from 'node:fs';

/** A metadata value with the GGUF type it is written as. */
export type GgufValue =
  | { readonly type: 'u32'; readonly value: number }
  | { readonly type: 'i32'; readonly value: number }
  | { readonly type: 'f32'; readonly value: number }
  | { readonly type: 'bool'; readonly value: boolean }
  | { readonly type: 'string'; readonly value: string }
  | { readonly type: 'string[]'; readonly value: readonly string[] }
  | { readonly type: 'i32[]'; readonly value: readonly number[] };

/** An F32 tensor; `dims` in GGUF order (ne[0] first: the fastest-varying, a matrix's input width). */
export interface GgufTensor {
  readonly name: string;
  readonly dims: readonly number[];
  readonly data: Float32Array;
}

// gguf_type values (ggml/include/gguf.h).
const U32 = 4;
const I32 = 5;
const F32 = 6;
const BOOL = 7;
const STRING = 8;
const ARRAY = 9;
const GGML_TYPE_F32 = 0;
const ALIGNMENT = 32;

class ByteSink {
  private readonly parts: Buffer[] = [];
  length = 0;
  push(buf: Buffer): void {
    this.parts.push(buf);
    this.length += buf.length;
  }
  u32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeUInt32LE(v);
    this.push(b);
  }
  i32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeInt32LE(v);
    this.push(b);
  }
  u64(v: number): void {
    const b = Buffer.alloc(8);
    b.writeBigUInt64LE(BigInt(v));
    this.push(b);
  }
  f32(v: number): void {
    const b = Buffer.alloc(4);
    b.writeFloatLE(v);
    this.push(b);
  }
  string(s: string): void {
    const bytes = Buffer.from(s, 'utf8');
    this.u64(bytes.length);
    this.push(bytes);
  }
  pad(): void {
    const rest = this.length % ALIGNMENT;
    if (rest !== 0) this.push(Buffer.alloc(ALIGNMENT - rest));
  }
  concat(): Buffer {
    return Buffer.concat(this.parts, this.length);
  }
}

function writeValue(sink: ByteSink, v: GgufValue): void {
  switch (v.type) {
    case 'u32':
      sink.u32(U32);
      sink.u32(v.value);
      return;
    case 'i32':
      sink.u32(I32);
      sink.i32(v.value);
      return;
    case 'f32':
      sink.u32(F32);
      sink.f32(v.value);
      return;
    case 'bool':
      sink.u32(BOOL);
      sink.push(Buffer.from([v.value ? 1 : 0]));
      return;
    case 'string':
      sink.u32(STRING);
      sink.string(v.value);
      return;
    case 'string[]':
      sink.u32(ARRAY);
      sink.u32(STRING);
      sink.u64(v.value.length);
      for (const s of v.value) sink.string(s);
      return;
    case 'i32[]':
      sink.u32(ARRAY);
      sink.u32(I32);
      sink.u64(v.value.length);
      for (const n of v.value) sink.i32(n);
      return;
  }
}

/** Serialises a GGUF v3 file. */
export function encodeGguf(metadata: ReadonlyMap<string, GgufValue>, tensors: readonly GgufTensor[]): Buffer {
  const head = new ByteSink();
  head.push(Buffer.from('GGUF', 'latin1'));
  head.u32(3);
  head.u64(tensors.length);
  head.u64(metadata.size + 1);
  head.string('general.alignment');
  writeValue(head, { type: 'u32', value: ALIGNMENT });
  for (const [key, value] of metadata) {
    head.string(key);
    writeValue(head, value);
  }
  const data = new ByteSink();
  for (const t of tensors) {
    const count = t.dims.reduce((a, b) => a * b, 1);
    if (count !== t.data.length) throw new Error(`tensor ${t.name}: dims ${t.dims.join('x')} hold ${count} values, data has ${t.data.length}`);
    head.string(t.name);
    head.u32(t.dims.length);
    for (const d of t.dims) head.u64(d);
    head.u32(GGML_TYPE_F32);
    head.u64(data.length);
    data.push(Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength));
    data.pad();
  }
  head.pad();
  return Buffer.concat([head.concat(), data.concat()]);
}

export function writeGguf(path: string, metadata: ReadonlyMap<string, GgufValue>, tensors: readonly GgufTensor[]): void {
  writeFileSync(path, encodeGguf(metadata, tensors));
}
