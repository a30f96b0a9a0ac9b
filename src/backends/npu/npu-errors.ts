import { createError, type ServeFnError } from '../../errors/index.js';
import type { NativeAclErrorFields, NativeGeErrorFields } from './native-binding.js';

function isNativeAclError(err: unknown): err is Error & NativeAclErrorFields {
  const fields = err as Partial<NativeAclErrorFields> | null;
  return err instanceof Error && typeof fields?.aclFunction === 'string' && typeof fields.aclCode === 'number';
}

function isNativeGeError(err: unknown): err is Error & NativeGeErrorFields {
  const fields = err as Partial<NativeGeErrorFields> | null;
  return err instanceof Error && typeof fields?.geFunction === 'string' && typeof fields.geStatus === 'number';
}

/**
 * A failed AscendCL call becomes SF_ERR_NPU_ACL with the function, the ACL code and the runtime's
 * own text, a failed GE call SF_ERR_NPU_GE with the function, the GE status and GE's message; any
 * other native failure becomes the caller's error for the step that failed. The native error stays
 * the `cause`, so its stack reaches the log.
 */
export function fromNativeError(err: unknown, otherwise: (message: string, cause: { cause: unknown }) => ServeFnError): ServeFnError {
  const cause = { cause: err };
  if (isNativeAclError(err)) return createError('SF_ERR_NPU_ACL', err.aclFunction, err.aclCode, err.aclMessage, cause);
  if (isNativeGeError(err)) return createError('SF_ERR_NPU_GE', err.geFunction, err.geStatus, err.geMessage, cause);
  return otherwise(err instanceof Error ? err.message : String(err), cause);
}

/** Awaits a native load; its failure goes through fromNativeError, else SF_ERR_BACKEND_LOAD_FAILED for `backend` and `label`. */
export async function loadNatively<T>(backend: string, label: string, load: () => Promise<T>): Promise<T> {
  try {
    return await load();
  } catch (err) {
    throw fromNativeError(err, (message, cause) => createError('SF_ERR_BACKEND_LOAD_FAILED', backend, label, message, cause));
  }
}
