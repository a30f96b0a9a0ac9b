export { ERROR_CATALOGUE, isErrorCode, type ErrorSpec, type SfErrorCode } from './catalogue.js';
export {
  ServeFnError,
  createError,
  serializeError,
  deserializeError,
  statusOf,
  type SerializedError,
} from './serve-fn-error.js';
export { exposesMessage, GENERIC_SERVER_ERROR, isServerFault } from './server-fault.js';
