import { extname } from 'node:path';
import { createError } from '../errors/index.js';
import type { Backend, DeviceSpec } from './backend.js';

/**
 * Picks the backend for a model file by its extension and the device it is to run on: an ONNX file
 * on an NPU goes to GE (npu_ge), elsewhere to ONNX Runtime. Backends load lazily, so unused native
 * code stays unloaded.
 */
export async function backendForFile(path: string, device?: DeviceSpec): Promise<Backend> {
  const ext = extname(path).toLowerCase();
  if (ext === '.onnx' && device?.kind === 'npu') {
    const { GeBackend } = await import('./npu/ge-backend.js');
    return new GeBackend();
  }
  if (ext === '.onnx') {
    const { OnnxBackend } = await import('./onnx/onnx-backend.js');
    return new OnnxBackend();
  }
  if (ext === '.om') {
    const { NpuBackend } = await import('./npu/npu-backend.js');
    return new NpuBackend();
  }
  throw createError('SF_ERR_BACKEND_UNSUPPORTED', ext || path, 'serve-fn loads .onnx (ONNX Runtime, or GE on an Ascend NPU) and .om (Ascend NPU) files');
}

/** Reads `cpu`, `gpu:1`, `npu:0`; a bare kind takes `fallbackId`. */
export function parseDevice(text: string, fallbackId = 0): DeviceSpec {
  const match = /^(cpu|gpu|cuda|npu)(?::(\d+))?$/.exec(text.trim().toLowerCase());
  if (!match) throw createError('SF_ERR_BAD_REQUEST', `device '${text}' is not one of cpu, gpu:<id>, npu:<id>`);
  const kind = match[1] === 'cuda' ? 'gpu' : (match[1] as DeviceSpec['kind']);
  return { kind, id: match[2] === undefined ? fallbackId : Number(match[2]) };
}
