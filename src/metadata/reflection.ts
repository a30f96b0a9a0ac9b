import 'reflect-metadata';
import { BATCH_KEY, DESIGN_PARAMTYPES_KEY, DESIGN_TYPE_KEY, ENDPOINTS_KEY, INSTANCES_KEY, MODEL_OPTIONS_KEY, SOCKETS_KEY, TENSORS_KEY, TEXT_MODEL_KEY, GENERATIVE_MODEL_KEY } from './metadata-keys.js';
import type { BatchRecord, EndpointRecord, InstancesRecord, ModelRecord, TensorsRecord, TextModelRecord, WebSocketEndpointRecord, GenerativeModelRecord } from './records.js';

/** The only file that touches `Reflect`: decorators write through it, the definition builder reads. */

type Target = abstract new (...args: never[]) => unknown;

export function recordModel(target: Target, record: ModelRecord): void {
  Reflect.defineMetadata(MODEL_OPTIONS_KEY, record, target);
}

export function readModel(target: Target): ModelRecord | undefined {
  return Reflect.getOwnMetadata(MODEL_OPTIONS_KEY, target) as ModelRecord | undefined;
}

export function recordEndpoint(target: Target, record: EndpointRecord): void {
  const list = (Reflect.getOwnMetadata(ENDPOINTS_KEY, target) as EndpointRecord[] | undefined) ?? [];
  Reflect.defineMetadata(ENDPOINTS_KEY, [...list, record], target);
}

export function readEndpoints(target: Target): readonly EndpointRecord[] {
  return readInherited<EndpointRecord>(ENDPOINTS_KEY, target);
}

export function recordWebSocketEndpoint(target: Target, record: WebSocketEndpointRecord): void {
  const list = (Reflect.getOwnMetadata(SOCKETS_KEY, target) as WebSocketEndpointRecord[] | undefined) ?? [];
  Reflect.defineMetadata(SOCKETS_KEY, [...list, record], target);
}

export function readWebSocketEndpoints(target: Target): readonly WebSocketEndpointRecord[] {
  return readInherited<WebSocketEndpointRecord>(SOCKETS_KEY, target);
}

export function recordBatch(target: Target, record: BatchRecord): void {
  const list = (Reflect.getOwnMetadata(BATCH_KEY, target) as BatchRecord[] | undefined) ?? [];
  Reflect.defineMetadata(BATCH_KEY, [...list, record], target);
}

export function readBatches(target: Target): readonly BatchRecord[] {
  return readInherited<BatchRecord>(BATCH_KEY, target);
}

/**
 * A class's method records and its base classes', as routing-controllers inherits routes: a
 * subclass serves its parent's decorated methods, and its own records of a method replace the
 * parent's (the subclass's override is what gets called either way).
 */
function readInherited<T extends { readonly method: string }>(key: string, target: Target): readonly T[] {
  const chain: Target[] = [];
  for (let c: unknown = target; typeof c === 'function' && c !== Function.prototype; c = Object.getPrototypeOf(c)) chain.unshift(c as Target);
  let records: readonly T[] = [];
  for (const c of chain) {
    const own = (Reflect.getOwnMetadata(key, c) as T[] | undefined) ?? [];
    const redecorated = new Set(own.map((r) => r.method));
    records = [...records.filter((r) => !redecorated.has(r.method)), ...own];
  }
  return records;
}

export function recordInstances(target: Target, record: InstancesRecord): void {
  Reflect.defineMetadata(INSTANCES_KEY, record, target);
}

export function readInstances(target: Target): InstancesRecord | undefined {
  return Reflect.getOwnMetadata(INSTANCES_KEY, target) as InstancesRecord | undefined;
}

export function recordTensors(target: Target, record: TensorsRecord): void {
  Reflect.defineMetadata(TENSORS_KEY, record, target);
}

/** Inherited, as `execute` is: a subclass serves its parent's tensor interface unless it declares its own. */
export function readTensors(target: Target): TensorsRecord | undefined {
  return Reflect.getMetadata(TENSORS_KEY, target) as TensorsRecord | undefined;
}

export function recordTextModel(target: Target, record: TextModelRecord): void {
  Reflect.defineMetadata(TEXT_MODEL_KEY, record, target);
}

/** Inherited with the tensor interface it implies. */
export function readTextModel(target: Target): TextModelRecord | undefined {
  return Reflect.getMetadata(TEXT_MODEL_KEY, target) as TextModelRecord | undefined;
}

export function recordGenerativeModel(target: Target, record: GenerativeModelRecord): void {
  Reflect.defineMetadata(GENERATIVE_MODEL_KEY, record, target);
}

/** Inherited, as @TextModel's record is. */
export function readGenerativeModel(target: Target): GenerativeModelRecord | undefined {
  return Reflect.getMetadata(GENERATIVE_MODEL_KEY, target) as GenerativeModelRecord | undefined;
}

/** Declared type of a property as emitted by the compiler; undefined when metadata was not emitted. */
export function readPropertyType(prototype: object, property: string): unknown {
  return Reflect.getMetadata(DESIGN_TYPE_KEY, prototype, property);
}

/** Parameter types of a method as emitted by the compiler; undefined when metadata was not emitted. */
export function readMethodParamTypes(prototype: object, method: string): readonly unknown[] | undefined {
  return Reflect.getMetadata(DESIGN_PARAMTYPES_KEY, prototype, method) as unknown[] | undefined;
}
