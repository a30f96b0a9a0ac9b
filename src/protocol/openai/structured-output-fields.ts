import type { StructuredOutput } from '../../generation/text-generator.js';
import { FieldError } from './openai-fields.js';
import type { RequestFields } from './request-fields.js';

/** A structured output and the field that asked for it (named in the 400 when the model has no grammar engine). */
export interface AskedStructuredOutput {
  readonly output: StructuredOutput;
  readonly field: string;
}

const KINDS = ['json', 'regex', 'choice', 'grammar'] as const;

/**
 * The structured output a request asks for, from OpenAI's `response_format` (json_object,
 * json_schema; vLLM generate/base/protocol.py), vLLM's `structured_outputs` (json, regex, choice,
 * grammar, json_object; vllm/sampling_params.py StructuredOutputsParams), or the `guided_*` fields
 * vLLM removed in v0.12: those are mapped onto the same outputs rather than ignored, since an
 * ignored constraint answers 200 with unconstrained text (vllm-project/vllm#53975).
 */
export function readStructuredOutput(fields: RequestFields, completions: boolean): AskedStructuredOutput | undefined {
  const asked: AskedStructuredOutput[] = [];
  const format = fields.object('response_format');
  if (format !== undefined) {
    const fromFormat = responseFormat(format, completions);
    if (fromFormat) asked.push({ output: fromFormat, field: 'response_format' });
  }
  const structured = fields.object('structured_outputs');
  if (structured !== undefined) {
    const kinds = KINDS.filter((kind) => structured[kind] !== undefined && structured[kind] !== null);
    const jsonObject = structured.json_object === true;
    if (kinds.length + (jsonObject ? 1 : 0) > 1) {
      throw new FieldError('structured_outputs', 'You can only use one kind of structured outputs constraint but multiple are specified');
    }
    if (kinds.length === 1) asked.push({ output: outputOf(kinds[0], structured[kinds[0]], `structured_outputs.${kinds[0]}`), field: 'structured_outputs' });
    if (jsonObject) asked.push({ output: { kind: 'json', schema: true }, field: 'structured_outputs' });
  }
  for (const kind of KINDS) {
    const legacy = `guided_${kind}`;
    const value = fields.take(legacy);
    if (value !== undefined) asked.push({ output: outputOf(kind, value, legacy), field: legacy });
  }
  // vLLM's backend choice has one engine here; reading it keeps it out of the ignored-fields header.
  fields.string('guided_decoding_backend');
  if (asked.length > 1) throw new FieldError(asked[1].field, `Only one structured output may be asked for; got ${asked.map((a) => a.field).join(' and ')}`);
  return asked[0];
}

function responseFormat(format: Readonly<Record<string, unknown>>, completions: boolean): StructuredOutput | undefined {
  switch (format.type) {
    case 'text':
      return undefined;
    case 'json_object':
      return { kind: 'json', schema: true };
    case 'json_schema': {
      const spec = format.json_schema as { schema?: unknown } | undefined;
      if (typeof spec !== 'object' || spec === null) throw new FieldError('response_format', 'When response_format type is `json_schema`, `json_schema` must be set');
      // OpenAI's json_schema has the schema under `schema`; vLLM also takes it as `json_schema` itself.
      const schema = spec.schema ?? (completions ? spec : undefined) ?? {};
      if (typeof schema !== 'object' || schema === null) throw new FieldError('response_format', '`response_format.json_schema.schema` must be an object');
      return { kind: 'json', schema };
    }
    default:
      throw new FieldError('response_format', `\`response_format.type\` must be one of text, json_object, json_schema, got ${JSON.stringify(format.type)}`);
  }
}

function outputOf(kind: (typeof KINDS)[number], value: unknown, field: string): StructuredOutput {
  switch (kind) {
    case 'json': {
      // vLLM takes the schema as an object or as its JSON text.
      const schema = typeof value === 'string' ? parseSchema(value, field) : value;
      if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) throw new FieldError(field, `\`${field}\` must be a JSON schema object`);
      return { kind: 'json', schema };
    }
    case 'regex':
      if (typeof value !== 'string') throw new FieldError(field, `\`${field}\` must be a string`);
      return { kind: 'regex', pattern: value };
    case 'choice':
      if (!Array.isArray(value) || value.length === 0 || !value.every((v) => typeof v === 'string')) throw new FieldError(field, `\`${field}\` must be a non-empty list of strings`);
      return { kind: 'choice', choices: value as string[] };
    case 'grammar':
      if (typeof value !== 'string') throw new FieldError(field, `\`${field}\` must be a string`);
      return { kind: 'grammar', ebnf: value };
  }
}

function parseSchema(text: string, field: string): unknown {
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new FieldError(field, `\`${field}\` is not valid JSON: ${(err as Error).message}`, { cause: err });
  }
}
