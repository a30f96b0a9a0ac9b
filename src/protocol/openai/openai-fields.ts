import { ServeFnError } from '../../errors/index.js';
import { expectedPhrase, fieldReaders, type Expected, type FieldProblem, type Fields } from '../../text/request-fields.js';

/**
 * Reading the JSON bodies of the OpenAI, Cohere, Jina and vLLM routes, with the text protocols'
 * shared readers (src/text/request-fields.ts): a wrong field is this family's 400 naming the field
 * as OpenAI's `param`. `null` counts as absent where the upstream type is optional (`X | None` in
 * vLLM's pydantic models).
 */
export type Body = Fields;

/** A request field that is missing or of the wrong type: the route's own 400, naming the field as OpenAI's `param` does. */
export class FieldError extends ServeFnError {
  readonly param: string;

  constructor(param: string, message: string, options?: ErrorOptions) {
    super('SF_ERR_BAD_REQUEST', message, 400, options);
    this.param = param;
  }
}

/**
 * An engine error about one field (parseTextInputs on `input`), re-raised with that field named;
 * the engine's error stays as the cause.
 */
export function aboutField<T>(param: string, read: () => T): T {
  try {
    return read();
  } catch (err) {
    if (err instanceof ServeFnError && !(err instanceof FieldError)) {
      throw Object.assign(new ServeFnError(err.code, err.message, err.statusCode, { cause: err }), { param });
    }
    throw err;
  }
}

/** OpenAI's family words booleans and every integer bound its own way. */
function expectation(expected: Expected): string {
  if (expected.kind === 'boolean') return 'true or false';
  if (expected.kind === 'integer') return `an integer of at least ${expected.min}`;
  return expectedPhrase(expected);
}

function openAiFieldError(problem: FieldProblem): FieldError {
  const { field } = problem;
  if ('missing' in problem) return new FieldError(field, `\`${field}\` is required`);
  const subject = problem.expected.kind === 'body' ? 'The request body' : `\`${field}\``;
  return new FieldError(field, `${subject} must be ${expectation(problem.expected)}`);
}

const fields = fieldReaders(openAiFieldError);

export const { optionalString, requiredString, optionalBoolean, optionalObject } = fields;
export const requestBody = fields.body;

/** An integer of at least `min`, or undefined when absent. */
export function optionalInteger(body: Body, field: string, min: number): number | undefined {
  return fields.optionalInteger(body, field, min);
}
