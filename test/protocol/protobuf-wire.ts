/**
 * Protocol Buffers wire format written and read by hand (protobuf.dev/programming-guides/encoding),
 * so the gRPC conformance tests check the field numbers and encodings on the wire themselves rather
 * than trusting the same .proto the server loads.
 */

const VARINT = 0;
const FIXED64 = 1;
const LENGTH = 2;
const FIXED32 = 5;

export function varint(value: number | bigint): Buffer {
  let v = BigInt.asUintN(64, BigInt(value));
  const out: number[] = [];
  do {
    const low = Number(v & 0x7fn);
    v >>= 7n;
    out.push(v === 0n ? low : low | 0x80);
  } while (v !== 0n);
  return Buffer.from(out);
}

const tag = (field: number, wire: number): Buffer => varint((field << 3) | wire);

export const pb = {
  varint: (field: number, value: number | bigint | boolean): Buffer => Buffer.concat([tag(field, VARINT), varint(typeof value === 'boolean' ? Number(value) : value)]),
  bytes: (field: number, value: Uint8Array): Buffer => Buffer.concat([tag(field, LENGTH), varint(value.length), value]),
  string: (field: number, value: string): Buffer => pb.bytes(field, Buffer.from(value, 'utf8')),
  message: (field: number, ...parts: Buffer[]): Buffer => pb.bytes(field, Buffer.concat(parts)),
  double: (field: number, value: number): Buffer => {
    const b = Buffer.alloc(8);
    b.writeDoubleLE(value);
    return Buffer.concat([tag(field, FIXED64), b]);
  },
  packedVarints: (field: number, values: readonly (number | bigint | boolean)[]): Buffer =>
    pb.bytes(field, Buffer.concat(values.map((v) => varint(typeof v === 'boolean' ? Number(v) : v)))),
  packedFloats: (field: number, values: readonly number[]): Buffer => {
    const b = Buffer.alloc(values.length * 4);
    values.forEach((v, i) => b.writeFloatLE(v, i * 4));
    return pb.bytes(field, b);
  },
  packedDoubles: (field: number, values: readonly number[]): Buffer => {
    const b = Buffer.alloc(values.length * 8);
    values.forEach((v, i) => b.writeDoubleLE(v, i * 8));
    return pb.bytes(field, b);
  },
  /** A map<string, V> entry: key = field 1, value = field 2. */
  mapEntry: (field: number, key: string, value: Buffer): Buffer => pb.message(field, pb.string(1, key), pb.bytes(2, value)),
};

export type WireValue = { wire: 0 | 1 | 2 | 5; value: bigint | Buffer };
export type Fields = Map<number, WireValue[]>;

/** Splits a message into its fields, in order, keeping repeated ones. */
export function parse(message: Buffer): Fields {
  const fields: Fields = new Map();
  let offset = 0;
  const readVarint = (): bigint => {
    let result = 0n;
    let shift = 0n;
    for (;;) {
      const byte = message[offset++];
      result |= BigInt(byte & 0x7f) << shift;
      if ((byte & 0x80) === 0) return result;
      shift += 7n;
    }
  };
  while (offset < message.length) {
    const key = Number(readVarint());
    const wire = (key & 7) as WireValue['wire'];
    let value: bigint | Buffer;
    if (wire === VARINT) value = readVarint();
    else if (wire === LENGTH) {
      const length = Number(readVarint());
      value = message.subarray(offset, offset + length);
      offset += length;
    } else {
      const size = wire === FIXED64 ? 8 : 4;
      value = message.subarray(offset, offset + size);
      offset += size;
    }
    const list = fields.get(key >> 3) ?? [];
    list.push({ wire, value });
    fields.set(key >> 3, list);
  }
  return fields;
}

export function strings(fields: Fields, field: number): string[] {
  return (fields.get(field) ?? []).map((f) => (f.value as Buffer).toString('utf8'));
}

export function messages(fields: Fields, field: number): Fields[] {
  return (fields.get(field) ?? []).map((f) => parse(f.value as Buffer));
}

export function rawBytes(fields: Fields, field: number): Buffer[] {
  return (fields.get(field) ?? []).map((f) => f.value as Buffer);
}

/** A packed repeated int64 field (e.g. a shape) as signed numbers. */
export function packedInt64(fields: Fields, field: number): number[] {
  const out: number[] = [];
  for (const f of fields.get(field) ?? []) {
    const inner = f.value as Buffer;
    let offset = 0;
    while (offset < inner.length) {
      let result = 0n;
      let shift = 0n;
      for (;;) {
        const byte = inner[offset++];
        result |= BigInt(byte & 0x7f) << shift;
        shift += 7n;
        if ((byte & 0x80) === 0) break;
      }
      out.push(Number(BigInt.asIntN(64, result)));
    }
  }
  return out;
}
