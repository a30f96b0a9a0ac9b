// Entry of every model-instance worker thread. Hooks registered on the main thread do not reach
// worker threads on Node 20, so each worker registers them before it loads serve-fn's worker code.
import './register.mjs';
import { workerData } from 'node:worker_threads';

await import(workerData.workerEntry);
