/** Lets every pending promise callback run: a macrotask turn drains the whole microtask queue before it. */
export const settle = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));
