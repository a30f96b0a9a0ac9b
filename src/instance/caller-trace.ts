import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * The traceparent of the request an instance is running, set by its host around each request's
 * code: ctx.infer reads it, so the callee's spans are children of the caller's compute span.
 */
const callerTrace = new AsyncLocalStorage<string>();

export function callerTraceparent(): string | undefined {
  return callerTrace.getStore();
}

/** Runs `run` as the work of the request traced as `traceparent`; as it is when the request is untraced. */
export function runTraced<R>(traceparent: string | undefined, run: () => R): R {
  return traceparent === undefined ? run() : callerTrace.run(traceparent, run);
}

/** The traceparent of a call's requests run together (a batch in one method call): its first traced one's. */
export function firstTrace(call: { readonly traceparents?: readonly (string | undefined)[] } | { readonly kind: 'text-forward' | 'decoder-step' }): string | undefined {
  return 'traceparents' in call ? call.traceparents?.find((t) => t !== undefined) : undefined;
}
