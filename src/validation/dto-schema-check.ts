import { Ajv, type ValidateFunction } from 'ajv';
import {
  getMetadataStorage,
  IS_BOOLEAN,
  IS_IN,
  IS_INT,
  IS_NUMBER,
  IS_OPTIONAL,
  IS_STRING,
  MAX,
  MAX_LENGTH,
  MIN,
  ValidationTypes,
} from 'class-validator';
import type { DtoClass } from '../metadata/records.js';

/**
 * A compiled JSON Schema check that accepts a DTO instance only when class-validator would, for
 * DTOs whose every decorator has a JSON Schema equivalent. It only ever answers "valid": a rejected
 * instance goes through class-validator, which writes the 422, so the body is the same on both paths
 * by construction and the messages (the decorators' own, custom ones included) have one source.
 */
export interface DtoSchemaCheck {
  (instance: object): boolean;
  /** The properties class-validator's `whitelist` keeps: those with any validation metadata. */
  readonly declared: ReadonlySet<string>;
}

type Fragment = Record<string, unknown>;
type FragmentOf = (constraints: readonly unknown[]) => Fragment | undefined;
type ValidationMetadata = ReturnType<ReturnType<typeof getMetadataStorage>['getTargetValidationMetadatas']>[number];

/**
 * Each decorator's schema says no less than the decorator: a value the schema accepts is one the
 * decorator accepts (https://ajv.js.org/json-schema.html). Where the schema is stricter (ajv counts
 * a length in code points, validator.js's isLength also drops variation selectors; an optional field
 * sent as null), class-validator decides, so that is only a slower answer, never a different one.
 * Min and Max also require a number, as class-validator's min/max do.
 */
const FRAGMENTS: ReadonlyMap<string, FragmentOf> = new Map<string, FragmentOf>([
  [IS_STRING, () => ({ type: 'string' })],
  [IS_INT, () => ({ type: 'integer' })],
  [IS_BOOLEAN, () => ({ type: 'boolean' })],
  // Options such as maxDecimalPlaces or allowNaN have no JSON Schema keyword.
  [IS_NUMBER, ([options]) => (options === undefined || (isPlainObject(options) && Object.keys(options).length === 0) ? { type: 'number' } : undefined)],
  [MIN, ([min]) => (isFiniteNumber(min) ? { type: 'number', minimum: min } : undefined)],
  [MAX, ([max]) => (isFiniteNumber(max) ? { type: 'number', maximum: max } : undefined)],
  [MAX_LENGTH, ([max]) => (Number.isInteger(max) && (max as number) >= 0 ? { type: 'string', maxLength: max } : undefined)],
  // isIn compares with ===, JSON Schema's enum by deep equality: the same for primitives only.
  [IS_IN, ([values]) => (Array.isArray(values) && values.length > 0 && values.every(isPrimitive) ? { enum: [...new Set(values)] } : undefined)],
]);

// strictNumbers: NaN and Infinity (implicit conversion of a query value) are no number or integer,
// as for class-validator's isNumber/isInt; the other options keep the instance unchanged.
const ajv = new Ajv({ strictNumbers: true, coerceTypes: false, useDefaults: false, removeAdditional: false, allErrors: false });

const checks = new WeakMap<DtoClass, DtoSchemaCheck | null>();

/** The DTO's compiled check, built once per class; undefined when some decorator has no exact schema. */
export function dtoSchemaCheck(dto: DtoClass): DtoSchemaCheck | undefined {
  let check = checks.get(dto);
  if (check === undefined) {
    const schema = dtoJsonSchema(dto);
    check = schema ? Object.assign(ajv.compile(schema) as ValidateFunction, { declared: new Set(declaredProperties(dto)) }) : null;
    checks.set(dto, check);
  }
  return check ?? undefined;
}

function declaredProperties(dto: DtoClass): string[] {
  return targetMetadatas(dto).map((m) => m.propertyName);
}

/** The same metadata validateSync reads with serve-fn's options (no groups, not `always`). */
function targetMetadatas(dto: DtoClass): ValidationMetadata[] {
  return getMetadataStorage().getTargetValidationMetadatas(dto, '', false, false);
}

function dtoJsonSchema(dto: DtoClass): Fragment | undefined {
  const properties: Record<string, Fragment> = {};
  const required: string[] = [];
  const byProperty = getMetadataStorage().groupByPropertyName(targetMetadatas(dto));
  for (const [name, metadatas] of Object.entries(byProperty)) {
    let optional = false;
    const fragments: Fragment[] = [];
    for (const m of metadatas) {
      if (m.each || m.always || (m.groups?.length ?? 0) > 0) return undefined;
      if (m.type === ValidationTypes.WHITELIST) continue;
      if (m.type === ValidationTypes.CONDITIONAL_VALIDATION && m.name === IS_OPTIONAL) {
        optional = true;
        continue;
      }
      const fragment = m.type === ValidationTypes.CUSTOM_VALIDATION && m.name ? FRAGMENTS.get(m.name)?.(m.constraints ?? []) : undefined;
      if (!fragment) return undefined;
      fragments.push(fragment);
    }
    if (fragments.length === 0) continue;
    properties[name] = fragments.length === 1 ? fragments[0] : { allOf: fragments };
    // Every mapped decorator rejects undefined, so a field that is not @IsOptional must be there.
    if (!optional) required.push(name);
  }
  return { type: 'object', properties, required };
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && Object.getPrototypeOf(value) === Object.prototype;
}

function isFiniteNumber(value: unknown): value is number {
  return typeof value === 'number' && Number.isFinite(value);
}

function isPrimitive(value: unknown): boolean {
  return typeof value === 'string' || typeof value === 'boolean' || isFiniteNumber(value);
}
