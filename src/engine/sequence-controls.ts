import { createError } from '../errors/index.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Datatype, Tensor } from '../spec/tensor.js';
import type { SequenceRoute } from './sequence-registry.js';
import type { ConfigTensor } from '../spec/config-tensor.js';

export type ControlKind = 'CONTROL_SEQUENCE_START' | 'CONTROL_SEQUENCE_READY' | 'CONTROL_SEQUENCE_END' | 'CONTROL_SEQUENCE_CORRID';

/**
 * One control input of `sequence_batching.control_input`: a tensor the model file takes that the
 * server fills for each request of a sequence, not the client. The START, END and READY controls
 * carry their `*_false_true` pair; CORRID carries the correlation id.
 */
export interface SequenceControlInput {
  readonly name: string;
  readonly kind: ControlKind;
  readonly datatype: Datatype;
  /** [false, true] for START, END and READY. */
  readonly falseTrue?: readonly [number | boolean, number | boolean];
}

/** The control inputs as the instance's model file sees them: one element, with the batch dimension when batching. */
export function controlInputSpecs(controls: readonly SequenceControlInput[]): ConfigTensor[] {
  return controls.map((c) => ({ name: c.name, datatype: c.datatype, dims: [1], optional: false }));
}

/**
 * The control tensors for one request (Triton's sequence batcher input overrides): START true on
 * the request that starts the sequence, END true on the one that ends it, READY true on every
 * request (a request always holds a ready slot here), CORRID the correlation id.
 */
export function controlTensors(controls: readonly SequenceControlInput[], route: SequenceRoute, batched: boolean, modelName: string): Tensor[] {
  const shape = batched ? [1, 1] : [1];
  return controls.map((control) => {
    if (control.kind === 'CONTROL_SEQUENCE_CORRID') return correlationTensor(control, route, shape, modelName);
    const on = control.kind === 'CONTROL_SEQUENCE_START' ? route.start : control.kind === 'CONTROL_SEQUENCE_END' ? route.end : true;
    const [off, onValue] = control.falseTrue!;
    return createTensor(control.name, control.datatype, shape, [on ? onValue : off]);
  });
}

function correlationTensor(control: SequenceControlInput, route: SequenceRoute, shape: number[], modelName: string): Tensor {
  const id = route.correlationId;
  if (control.datatype === 'BYTES') return createTensor(control.name, 'BYTES', shape, [String(id)]);
  if (typeof id === 'string') {
    throw createError('SF_ERR_BAD_REQUEST', `sequence_id '${id}' is a string, but model '${modelName}' takes its correlation id as ${control.datatype} in control input '${control.name}'; send an integer sequence_id`);
  }
  try {
    return createTensor(control.name, control.datatype, shape, [id]);
  } catch (err) {
    throw createError('SF_ERR_BAD_REQUEST', `sequence_id ${id} does not fit control input '${control.name}' of model '${modelName}' (${control.datatype}): ${(err as Error).message}`);
  }
}
