import { createError, type ServeFnError } from '../../errors/index.js';
import type { NativeAclErrorFields } from './native-binding.js';

function isNativeAclError(err: unknown): err is Error & NativeAclErrorFields {
  const fields = err as Partial<NativeAclErrorFields> | null;
  return err instanceof Error && typeof fields?.aclFunction === 'string' && typeof fields.aclCode === 'number';
}

/**
 * A failed AscendCL call becomes SF_ERR_NPU_ACL with the function, the ACL code and the runtime's
 * own text; any other native failure becomes the caller's error for the step that failed.
 */
export function fromNativeError(err: unknown, otherwise: (message: string) => ServeFnError): ServeFnError {
  if (isNativeAclError(err)) return createError('SF_ERR_NPU_ACL', err.aclFunction, err.aclCode, err.aclMessage);
  return otherwise(err instanceof Error ? err.message : String(err));
}
