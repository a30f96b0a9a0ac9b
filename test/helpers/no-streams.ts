import type { ModelInstance } from '../../src/engine/model-instance.js';

/** For fake instances in tests that only run batches: opening a stream or a socket is a test bug. */
export const noStreams: Pick<ModelInstance, 'openStream' | 'openSocket'> = {
  openStream() {
    throw new Error('this fake instance runs batches only');
  },
  openSocket() {
    throw new Error('this fake instance runs batches only');
  },
};
