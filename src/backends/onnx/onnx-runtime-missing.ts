import { createRequire } from 'node:module';

/**
 * onnxruntime-node is an optional peer dependency (docs/install.md): on linux-x64 its install
 * script downloads ~1 GB of CUDA providers from NuGet unless told not to, and a dependency cannot
 * tell it, so serve-fn leaves installing it to the project that serves ONNX or text models.
 * This says why ONNX Runtime is unavailable, naming that step when the package is simply absent.
 */
export function onnxRuntimeLoadFailure(err: unknown): string {
  const { code, message } = err as { code?: string; message?: string };
  if (code === 'ERR_MODULE_NOT_FOUND' && message?.includes("'onnxruntime-node'")) {
    return (
      'onnxruntime-node is not installed; ONNX and text models need it, an optional peer dependency of serve-fn: ' +
      `run \`ONNXRUNTIME_NODE_INSTALL=skip npm install onnxruntime-node@${supportedOnnxRuntime()}\` in your project (docs/install.md)`
    );
  }
  return `onnxruntime-node could not be loaded: ${message ?? String(err)}`;
}

/** The onnxruntime-node version serve-fn's package.json asks its peers for. */
function supportedOnnxRuntime(): string {
  const pkg = createRequire(import.meta.url)('../../../package.json') as { peerDependencies: Record<string, string> };
  return pkg.peerDependencies['onnxruntime-node'];
}
