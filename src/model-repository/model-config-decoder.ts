import { createError } from '../errors/index.js';
import type { PbtxtField, PbtxtMessage, PbtxtPosition, PbtxtScalar, PbtxtValue } from './pbtxt-parser.js';
import { one, type FieldSpec, type FieldType, type IntKind, type MessageSchema, type ScalarType } from './model-config-schema.js';

/** Decoding of a parsed config.pbtxt tree into typed values, with protobuf's rules on repetition, oneofs and integer ranges. */
const INT_RANGES: Readonly<Record<IntKind, readonly [bigint, bigint]>> = {
  int32: [-(2n ** 31n), 2n ** 31n - 1n],
  uint32: [0n, 2n ** 32n - 1n],
  int64: [-(2n ** 63n), 2n ** 63n - 1n],
  uint64: [0n, 2n ** 64n - 1n],
};
const MAX_SAFE = BigInt(Number.MAX_SAFE_INTEGER);

export type Decoded = Record<string, unknown>;
/** Keyed by field name, and by `oneof <name>` for the member of a oneof already written. */
type WrittenFields = Map<string, { name: string; at: PbtxtPosition }>;

export class ConfigDecoder {
  readonly warnings: string[] = [];

  constructor(private readonly file: string) {}

  decodeMessage(schema: MessageSchema, message: PbtxtMessage): Decoded {
    const values = new Map<string, unknown>();
    const setOnce: WrittenFields = new Map();
    for (const field of message.fields) {
      const spec = this.specOf(schema, field);
      if (spec?.label === 'single') {
        this.checkSetOnce(schema, spec, field, setOnce);
        values.set(field.name, this.decodeValue(spec.type, field.value, field.name));
      } else if (spec?.label === 'repeated') {
        const previous = (values.get(field.name) as unknown[] | undefined) ?? [];
        values.set(field.name, [...previous, ...itemsOf(field.value).map((item) => this.decodeValue(spec.type, item, field.name))]);
      } else if (spec?.label === 'map') {
        const previous = (values.get(field.name) as Decoded | undefined) ?? {};
        values.set(field.name, this.decodeMapEntries(spec, itemsOf(field.value), field.name, previous));
      }
    }

    const decoded: Decoded = {};
    for (const [name, spec] of Object.entries(schema.fields)) {
      if (values.has(name)) decoded[name] = values.get(name);
      else if (spec.label === 'repeated') decoded[name] = [];
      else if (spec.label === 'map') decoded[name] = {};
      else if (spec.label === 'single' && spec.type.kind !== 'message' && !spec.oneof) decoded[name] = scalarDefault(spec.type);
    }
    return decoded;
  }

  /** The field's spec, or undefined (with a warning) for a field serve-fn does not read. */
  private specOf(schema: MessageSchema, field: PbtxtField): FieldSpec | undefined {
    const spec = Object.hasOwn(schema.fields, field.name) ? schema.fields[field.name]! : undefined;
    if (spec === undefined) this.warn(field, `unknown field '${field.name}' in ${schema.name} is ignored`);
    else if (spec.label === 'ignored') this.warn(field, `field '${field.name}' in ${schema.name} is not used by serve-fn and is ignored`);
    return spec;
  }

  /** A non-repeated field may be written once, and only one member of a oneof may be written. */
  private checkSetOnce(schema: MessageSchema, spec: FieldSpec, field: PbtxtField, setOnce: WrittenFields): void {
    const first = setOnce.get(field.name);
    if (first) {
      this.fail(field, `field '${field.name}' is not repeated but is set again (first set at line ${first.at.line}, column ${first.at.column})`);
    }
    const other = spec.oneof === undefined ? undefined : setOnce.get(`oneof ${spec.oneof}`);
    if (other) {
      const where = `line ${other.at.line}, column ${other.at.column}`;
      this.fail(field, `field '${field.name}' cannot be set together with '${other.name}' (${where}): they are alternatives in ${schema.name}`);
    }
    setOnce.set(field.name, { name: field.name, at: field });
    if (spec.oneof !== undefined) setOnce.set(`oneof ${spec.oneof}`, { name: field.name, at: field });
    if (field.value.kind === 'list') this.fail(field.value, `field '${field.name}' is not repeated and cannot take a list`);
  }

  private decodeMapEntries(spec: FieldSpec, entries: readonly PbtxtValue[], fieldName: string, into: Decoded): Decoded {
    const entrySchema: MessageSchema = { name: `${fieldName} entry`, fields: { key: one(spec.mapKey!), value: one(spec.type) } };
    for (const entry of entries) {
      if (entry.kind !== 'message') {
        this.fail(entry, `map field '${fieldName}' expects entries like { key: ... value: ... }, found ${describeValue(entry)}`);
      }
      const { key, value } = this.decodeMessage(entrySchema, entry);
      const emptyValue: PbtxtMessage = { kind: 'message', fields: [], line: entry.line, column: entry.column };
      // defineProperty, not assignment: a key named `__proto__` must stay an ordinary entry.
      Object.defineProperty(into, String(key), {
        value: value ?? this.decodeValue(spec.type, emptyValue, fieldName),
        enumerable: true,
        writable: true,
        configurable: true,
      });
    }
    return into;
  }

  private decodeValue(type: FieldType, value: PbtxtValue, fieldName: string): unknown {
    if (type.kind === 'message') {
      if (value.kind !== 'message') this.fail(value, `field '${fieldName}' expects a message { ... }, found ${describeValue(value)}`);
      return this.decodeMessage(type.schema, value);
    }
    if (value.kind !== 'message' && value.kind !== 'list') return this.decodeScalar(type, value, fieldName);
    return this.fail(value, `field '${fieldName}' expects ${expected(type)}, found ${describeValue(value)}`);
  }

  private decodeScalar(type: ScalarType, value: PbtxtScalar, fieldName: string): unknown {
    const mismatch = (): never => this.fail(value, `field '${fieldName}' expects ${expected(type)}, found ${describeValue(value)}`);
    switch (type.kind) {
      case 'string':
        return value.kind === 'string' ? value.text : mismatch();
      case 'bool':
        if (value.kind === 'identifier' && ['true', 'True', 't'].includes(value.text)) return true;
        if (value.kind === 'identifier' && ['false', 'False', 'f'].includes(value.text)) return false;
        return value.kind === 'integer' && (value.text === '0' || value.text === '1') ? value.text === '1' : mismatch();
      case 'float':
        return value.kind === 'integer' || value.kind === 'float' ? parseFloatLiteral(value.text) : (parseNonFinite(value) ?? mismatch());
      case 'enum': {
        if (value.kind === 'identifier' && type.values.includes(value.text)) return value.text;
        return (value.kind === 'integer' && type.values[Number(parseIntegerLiteral(value.text))]) || mismatch();
      }
      default:
        return value.kind === 'integer' ? this.checkInteger(type, parseIntegerLiteral(value.text), value, fieldName) : mismatch();
    }
  }

  /** Out of the proto type's range, or below the schema's minimum, is an error; beyond 2^53 - 1 is held as the nearest safe integer. */
  private checkInteger(type: ScalarType & { kind: IntKind }, n: bigint, at: PbtxtScalar, fieldName: string): number {
    const [min, max] = INT_RANGES[type.kind];
    if (n < min || n > max) this.fail(at, `value ${at.text} is out of range for field '${fieldName}' (${type.kind})`);
    if (type.min !== undefined && n < BigInt(type.min)) this.fail(at, `field '${fieldName}' must be ${type.min} or more, got ${at.text}`);
    if (n > MAX_SAFE || n < -MAX_SAFE) {
      const held = n > 0n ? Number.MAX_SAFE_INTEGER : -Number.MAX_SAFE_INTEGER;
      this.warn(at, `value ${at.text} of field '${fieldName}' is beyond what serve-fn holds exactly and is read as ${held}`);
      return held;
    }
    return Number(n);
  }

  private warn(at: PbtxtPosition, what: string): void {
    this.warnings.push(`${this.file}:${at.line}:${at.column}: ${what}`);
  }

  private fail(at: PbtxtPosition, what: string): never {
    throw createError('SF_ERR_CONFIG_PARSE', this.file, at.line, at.column, what);
  }
}

function itemsOf(value: PbtxtValue): readonly PbtxtValue[] {
  return value.kind === 'list' ? value.items : [value];
}

function parseIntegerLiteral(text: string): bigint {
  const negative = text.startsWith('-');
  const body = negative ? text.slice(1) : text;
  const magnitude = /^0[0-7]+$/.test(body) ? BigInt(`0o${body.slice(1)}`) : BigInt(body);
  return negative ? -magnitude : magnitude;
}

function parseFloatLiteral(text: string): number {
  return /^-?0[xX]|^-?0[0-7]+$/.test(text) ? Number(parseIntegerLiteral(text)) : Number.parseFloat(text);
}

function parseNonFinite(value: PbtxtScalar): number | undefined {
  if (value.kind !== 'identifier') return undefined;
  const word = value.text.toLowerCase();
  if (word === 'inf' || word === 'infinity') return Infinity;
  if (word === '-inf' || word === '-infinity') return -Infinity;
  return word === 'nan' || word === '-nan' ? NaN : undefined;
}

function scalarDefault(type: ScalarType): unknown {
  switch (type.kind) {
    case 'string':
      return '';
    case 'bool':
      return false;
    case 'enum':
      return type.values[0];
    default:
      return 0;
  }
}

function expected(type: ScalarType): string {
  switch (type.kind) {
    case 'string':
      return 'a quoted string';
    case 'bool':
      return 'true or false';
    case 'float':
      return 'a number';
    case 'enum':
      return `a ${type.name} value (${type.values.join(', ')})`;
    default:
      return `an integer (${type.kind})`;
  }
}

function describeValue(value: PbtxtValue): string {
  switch (value.kind) {
    case 'message':
      return 'a message';
    case 'list':
      return 'a list';
    case 'string':
      return `string ${JSON.stringify(value.text)}`;
    case 'identifier':
      return `'${value.text}'`;
    default:
      return `number ${value.text}`;
  }
}
