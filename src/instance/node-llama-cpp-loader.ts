import { createRequire } from 'node:module';
import type { Llama } from 'node-llama-cpp';
import { createError } from '../errors/index.js';

type NodeLlamaCpp = typeof import('node-llama-cpp');

/**
 * node-llama-cpp is an optional peer dependency (docs/generation.md, "GGUF files"): its prebuilt
 * llama.cpp binaries weigh hundreds of MB per platform, and only a server of `.gguf` files needs
 * them, so it is imported here, the first time a GGUF file is served, and never at start-up.
 */
export async function importNodeLlamaCpp(file: string, importer: () => Promise<NodeLlamaCpp> = () => import('node-llama-cpp')): Promise<NodeLlamaCpp> {
  try {
    return await importer();
  } catch (err) {
    const { code, message } = err as { code?: string; message?: string };
    if (code === 'ERR_MODULE_NOT_FOUND' && message?.includes("'node-llama-cpp'")) {
      throw createError('SF_ERR_GGUF_RUNTIME_MISSING', file, supportedNodeLlamaCpp(), 'docs/generation.md', { cause: err });
    }
    throw createError('SF_ERR_GGUF_INVALID', file, `node-llama-cpp could not be loaded: ${message ?? String(err)}`, { cause: err });
  }
}

/** The node-llama-cpp version serve-fn's package.json asks its peers for (3.21.1: the newest whose linux-x64 prebuilt binary was checked here). */
export function supportedNodeLlamaCpp(): string {
  const pkg = createRequire(import.meta.url)('../../package.json') as { peerDependencies: Record<string, string> };
  return pkg.peerDependencies['node-llama-cpp']!;
}

let llama: Promise<Llama> | undefined;

/**
 * One llama.cpp backend per process (node-llama-cpp's `getLlama` loads the native binary and
 * starts its thread pool). `build: 'never'`: a missing prebuilt binary is an error, never a
 * source build, which would download llama.cpp at run time.
 */
export function sharedLlama(lib: NodeLlamaCpp, gpu: 'auto' | false): Promise<Llama> {
  llama ??= lib.getLlama({ build: 'never', gpu, logLevel: lib.LlamaLogLevel.error }).catch((err: unknown) => {
    llama = undefined;
    throw err;
  });
  return llama;
}
