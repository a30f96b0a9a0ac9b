/**
 * Every metadata key serve-fn records. They are strings, not Symbols, on purpose: a user's model
 * file may load serve-fn's published build while the CLI runs another copy, and both copies must
 * read the same records (routing-controllers keeps its store global for the same reason).
 */
export const MODEL_OPTIONS_KEY = 'serve-fn:model';
export const ENDPOINTS_KEY = 'serve-fn:endpoints';
export const BATCH_KEY = 'serve-fn:batch';
export const INSTANCES_KEY = 'serve-fn:instances';
export const SOCKETS_KEY = 'serve-fn:sockets';
export const TENSORS_KEY = 'serve-fn:tensors';

/** TypeScript's own keys, emitted by tsc/SWC with emitDecoratorMetadata. */
export const DESIGN_PARAMTYPES_KEY = 'design:paramtypes';
export const DESIGN_TYPE_KEY = 'design:type';
export const TEXT_MODEL_KEY = 'serve-fn:text-model';
export const GENERATIVE_MODEL_KEY = 'serve-fn:generative-model';
