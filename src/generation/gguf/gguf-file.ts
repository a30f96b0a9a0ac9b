import { closeSync, openSync, readSync, statSync } from 'node:fs';

const GGUF_MAGIC = 'GGUF';

/**
 * A file serve-fn serves with the GGUF runtime: named `*.gguf` and starting with the GGUF magic
 * (https://github.com/ggml-org/ggml/blob/master/docs/gguf.md). Sync, like the other kinds' checks
 * in `serve-fn start`'s entry discovery.
 */
export function isGgufFile(path: string): boolean {
  if (!path.toLowerCase().endsWith('.gguf')) return false;
  try {
    if (!statSync(path).isFile()) return false;
    const fd = openSync(path, 'r');
    try {
      const head = Buffer.alloc(4);
      return readSync(fd, head, 0, 4, 0) === 4 && head.toString('latin1') === GGUF_MAGIC;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
}
