import { createError } from '../errors/index.js';
import type { SequenceParameters } from './sequence-registry.js';

/** The request parameters of the sequence extension (Triton's docs/protocol/extension_sequence.md), which the server consumes. */
const SEQUENCE_KEYS = ['sequence_id', 'sequence_start', 'sequence_end'] as const;

/**
 * Takes the sequence parameters out of a request's parameters: the model sees them as its
 * request's correlation id and flags (Triton's `correlation_id()` and `flags()`), not as parameters.
 * The protocol decoders have checked their types.
 */
export function takeSequenceParameters(parameters: Readonly<Record<string, unknown>>): { sequence: SequenceParameters; rest: Record<string, unknown> } {
  const { sequence_id: id, sequence_start: start, sequence_end: end, ...rest } = parameters;
  const sequence: SequenceParameters = {
    ...(typeof id === 'number' || typeof id === 'string' ? { id } : {}),
    start: start === true,
    end: end === true,
  };
  return { sequence, rest };
}

/**
 * Refuses sequence parameters sent to a model without sequence_batching, which would otherwise be
 * run as if stateless. A zero or empty id and false flags ask for no sequence and pass.
 */
export function refuseSequenceParameters(modelName: string, parameters: Readonly<Record<string, unknown>>): void {
  const set = SEQUENCE_KEYS.find((key) => {
    const value = parameters[key];
    return value !== undefined && value !== false && value !== 0 && value !== '';
  });
  if (set !== undefined) throw createError('SF_ERR_SEQUENCE_UNSUPPORTED', modelName, set);
}
