import { plainToInstance, TransformationType } from 'class-transformer';
import { defaultMetadataStorage } from 'class-transformer/cjs/storage.js';
import {
  getMetadataStorage,
  IS_ARRAY,
  IS_BOOLEAN,
  IS_DATE,
  IS_ENUM,
  IS_INT,
  IS_NUMBER,
  IS_OBJECT,
  IS_STRING,
  validate,
  validateSync,
  ValidationTypes,
  type ValidationError,
} from 'class-validator';
import type { DtoClass } from '../metadata/records.js';
import { readPropertyType } from '../metadata/reflection.js';
import { dtoSchemaCheck } from './dto-schema-check.js';
import { IS_FILE, isUploadedFile } from './uploaded-file.js';

/** One entry of FastAPI's 422 body: `{"detail": [{loc, msg, type, input}]}`. */
export interface ValidationIssue {
  readonly loc: readonly (string | number)[];
  readonly msg: string;
  readonly type: string;
  readonly input?: unknown;
  /** What pydantic adds for some types: the parser's message for `json_invalid`. */
  readonly ctx?: Readonly<Record<string, unknown>>;
}

/** Where the input came from: FastAPI's locations, plus a WebSocket client's message. */
export type RequestLocation = 'body' | 'query' | 'path' | 'message';

export class RequestValidationError extends Error {
  readonly statusCode = 422;
  constructor(readonly detail: readonly ValidationIssue[]) {
    super(detail.map((d) => `${d.loc.join('.')}: ${d.msg}`).join('; '));
    this.name = 'RequestValidationError';
  }
}

/** The strings FastAPI (pydantic) reads as booleans. */
const BOOLEAN_STRINGS: ReadonlyMap<string, boolean> = new Map([
  ['true', true], ['1', true], ['yes', true], ['on', true], ['t', true], ['y', true],
  ['false', false], ['0', false], ['no', false], ['off', false], ['f', false], ['n', false],
]);

/**
 * Turns plain input into a validated DTO instance (class-transformer, then class-validator).
 * Query, path and form values arrive as strings, so those locations (and multipart bodies, with
 * `stringValues`) convert implicitly by the declared property types, as FastAPI does; JSON bodies
 * keep their JSON types.
 */
export async function validateDto<T extends object>(
  dto: DtoClass,
  plain: unknown,
  location: RequestLocation,
  stringValues = location !== 'body',
): Promise<T> {
  if (plain === null || typeof plain !== 'object' || Array.isArray(plain)) {
    throw new RequestValidationError([
      { loc: [location], msg: 'Input should be a valid object', type: 'model_attributes_type', input: plain },
    ]);
  }
  const instance = toDtoInstance<T>(dto, plain, stringValues);
  if (stringValues) {
    parseBooleans(dto, plain as Record<string, unknown>, instance as Record<string, unknown>);
    keepUploadedFiles(plain as Record<string, unknown>, instance as Record<string, unknown>);
  }
  // The compiled check accepts only what class-validator accepts; what it rejects, class-validator
  // reads again and reports. Removing the undeclared keys is what `whitelist` would have done.
  const check = dtoSchemaCheck(dto);
  if (check?.(instance)) {
    for (const key of Object.keys(instance)) if (!check.declared.has(key)) delete (instance as Record<string, unknown>)[key];
    return instance;
  }
  const options = { whitelist: true, forbidUnknownValues: false };
  const errors = needsAsyncValidation(dto) ? await validate(instance, options) : validateSync(instance, options);
  if (errors.length > 0) throw new RequestValidationError(toIssues(errors, [location], plain as Record<string, unknown>));
  return instance;
}

/**
 * `plain` as an instance of `dto`, as class-transformer's plainToInstance makes it (the HTTP thread
 * validating it, and the instance handing it to the model); an array becomes an array of instances.
 */
export function toDtoInstance<T extends object>(dto: DtoClass, plain: object, implicitConversion: boolean): T {
  return (implicitConversion || Array.isArray(plain) || needsClassTransformer(dto, plain) ? plainToInstance(dto, plain, { enableImplicitConversion: implicitConversion }) : Object.assign(new dto(), plain)) as T;
}

/**
 * Without @Type, @Transform, @Expose or @Exclude on the DTO, without methods or accessors, and
 * without implicit conversion (JSON bodies), class-transformer only constructs the class and copies
 * the input into it, element by element: for a tensor sent as 256 numbers that was a tenth of the
 * HTTP thread's time per request. Object.assign onto the constructed class gives the same instance.
 */
function needsClassTransformer(dto: DtoClass, plain: object): boolean {
  if (hasClassTransformerOptions(dto)) return true;
  const storage = defaultMetadataStorage;
  for (const key of Object.keys(plain)) {
    // Object.assign would set the prototype from such a key (JSON.parse makes it an own property).
    if (key === '__proto__') return true;
    if (storage.findTypeMetadata(dto, key) || storage.findTransformMetadatas(dto, key, TransformationType.PLAIN_TO_CLASS).length > 0) return true;
  }
  return false;
}

const transformedDtos = new WeakMap<DtoClass, boolean>();

/** The class-level half of needsClassTransformer: it depends on the DTO alone, so it is read once per class. */
function hasClassTransformerOptions(dto: DtoClass): boolean {
  let known = transformedDtos.get(dto);
  if (known === undefined) {
    const storage = defaultMetadataStorage;
    known = storage.getStrategy(dto) !== 'none' || storage.getExposedMetadatas(dto).length > 0 || storage.getExcludedMetadatas(dto).length > 0 || hasMembers(dto);
    transformedDtos.set(dto, known);
  }
  return known;
}

/**
 * Methods and accessors, on the class or its bases, or function-valued fields: plainToInstance does
 * not copy an input key onto those (a getter without setter would make Object.assign throw).
 */
function hasMembers(dto: DtoClass): boolean {
  for (let proto = dto.prototype as object | null; proto && proto !== Object.prototype; proto = Object.getPrototypeOf(proto) as object | null) {
    if (Reflect.ownKeys(proto).some((key) => key !== 'constructor')) return true;
  }
  return Object.values(new dto()).some((value) => typeof value === 'function');
}

const asyncDtos = new WeakMap<DtoClass, boolean>();

/**
 * validateSync is about twice as fast as validate, which matters on the HTTP thread, but skips
 * async constraints; DTOs with one (or with nested DTOs, which may have one) keep the async path.
 */
function needsAsyncValidation(dto: DtoClass): boolean {
  let known = asyncDtos.get(dto);
  if (known === undefined) {
    const storage = getMetadataStorage();
    known = storage.getTargetValidationMetadatas(dto, '', true, false).some(
      (m) =>
        m.type === ValidationTypes.NESTED_VALIDATION ||
        m.type === ValidationTypes.PROMISE_VALIDATION ||
        (m.constraintCls !== undefined && storage.getTargetValidatorConstraints(m.constraintCls).some((c) => c.async)),
    );
    asyncDtos.set(dto, known);
  }
  return known;
}

/**
 * class-transformer converts implicitly with `Boolean(value)`, which reads 'false' as true; a
 * string that is no boolean is kept as it came, so validation rejects it.
 */
function parseBooleans(dto: DtoClass, plain: Record<string, unknown>, instance: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(plain)) {
    if (typeof value !== 'string' || readPropertyType(dto.prototype, key) !== Boolean) continue;
    instance[key] = BOOLEAN_STRINGS.get(value.toLowerCase()) ?? value;
  }
}

/**
 * Implicit conversion turns a file sent for a string field into "[object Object]"; the file is
 * put back, so the field's own checks reject it.
 */
function keepUploadedFiles(plain: Record<string, unknown>, instance: Record<string, unknown>): void {
  for (const [key, value] of Object.entries(plain)) if (isUploadedFile(value)) instance[key] = value;
}

/**
 * Constraints on what a value is rather than on its value. When one fails, the field's other
 * constraints say nothing useful (`5` is neither too short nor too long a string), so it is the
 * field's one issue, as pydantic reports a single `string_type` and no length errors.
 */
const TYPE_CONSTRAINTS: ReadonlySet<string> = new Set([
  IS_STRING,
  IS_NUMBER,
  IS_INT,
  IS_BOOLEAN,
  IS_DATE,
  IS_ARRAY,
  IS_OBJECT,
  IS_ENUM,
  IS_FILE,
  ValidationTypes.NESTED_VALIDATION,
]);

/** `raw` holds what the client sent at this level, so `input` shows it rather than a failed conversion (NaN). */
function toIssues(errors: readonly ValidationError[], parent: readonly (string | number)[], raw?: Record<string, unknown>): ValidationIssue[] {
  const issues: ValidationIssue[] = [];
  for (const error of errors) {
    const loc = [...parent, asLocPart(error.property)];
    const constraints = Object.entries(error.constraints ?? {});
    if (constraints.length > 0 && error.value === undefined) {
      issues.push({ loc, msg: 'Field required', type: 'missing' });
    } else {
      const input = shownInput(raw && Object.hasOwn(raw, error.property) ? raw[error.property] : error.value);
      const typeFailure = constraints.find(([type]) => TYPE_CONSTRAINTS.has(type));
      for (const [type, msg] of typeFailure ? [typeFailure] : constraints) issues.push({ loc, msg, type, input });
    }
    if (error.children?.length) issues.push(...toIssues(error.children, loc));
  }
  return issues;
}

/** A file is shown by name, type and size: echoing its bytes would make the answer larger than the upload. */
function shownInput(value: unknown): unknown {
  return isUploadedFile(value) ? { filename: value.filename, mimetype: value.mimetype, size: value.data.byteLength } : value;
}

function asLocPart(property: string): string | number {
  return /^\d+$/.test(property) ? Number(property) : property;
}
