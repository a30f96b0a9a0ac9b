import { describe, expect, it } from 'vitest';
import { backendForFile, parseDevice } from '../../src/backends/backend-for-file.js';

describe('backendForFile', () => {
  it('picks ONNX Runtime for .onnx and the NPU backend for .om', async () => {
    expect((await backendForFile('/m/det.onnx')).name).toBe('onnxruntime');
    expect((await backendForFile('/m/det.onnx', { kind: 'gpu', id: 0 })).name).toBe('onnxruntime');
    expect((await backendForFile('/m/model.OM')).name).toBe('npu_om');
  });

  it('picks GE for .onnx on an NPU', async () => {
    expect((await backendForFile('/m/det.onnx', { kind: 'npu', id: 1 })).name).toBe('npu_ge');
    expect((await backendForFile('/m/model.om', { kind: 'npu', id: 1 })).name).toBe('npu_om');
  });

  it('refuses other files with the supported list', async () => {
    await expect(backendForFile('/m/model.pt')).rejects.toMatchObject({
      code: 'SF_ERR_BACKEND_UNSUPPORTED',
      message: "Backend '.pt' is not supported yet: serve-fn loads .onnx (ONNX Runtime, or GE on an Ascend NPU) and .om (Ascend NPU) files",
    });
  });
});

describe('parseDevice', () => {
  it('reads kinds with and without ids', () => {
    expect(parseDevice('cpu')).toEqual({ kind: 'cpu', id: 0 });
    expect(parseDevice('gpu:1')).toEqual({ kind: 'gpu', id: 1 });
    expect(parseDevice('cuda:2')).toEqual({ kind: 'gpu', id: 2 });
    expect(parseDevice('npu', 3)).toEqual({ kind: 'npu', id: 3 });
  });

  it('refuses anything else', () => {
    expect(() => parseDevice('tpu:0')).toThrow("device 'tpu:0' is not one of cpu, gpu:<id>, npu:<id>");
  });
});
