import { createRequire } from 'node:module';
import { onnxRuntimeLoadFailure } from '../backends/onnx/onnx-runtime-missing.js';
import { SERVER_IDENTITY } from '../serve-fn-server.js';
import { describeGe, describeNpu, type GeDoctorReport, type NpuDoctorReport } from './doctor-npu.js';

export interface OnnxRuntimeReport {
  readonly available: boolean;
  readonly version?: string;
  readonly providers?: readonly { name: string; bundled: boolean }[];
  readonly reason?: string;
}

export interface DoctorReport {
  readonly serveFn: string;
  readonly node: string;
  readonly onnxruntime: OnnxRuntimeReport;
  readonly npu: NpuDoctorReport;
  readonly ge: GeDoctorReport;
}

async function describeOnnxRuntime(): Promise<OnnxRuntimeReport> {
  try {
    const ort = await import('onnxruntime-node');
    const pkg = createRequire(import.meta.url)('onnxruntime-node/package.json') as { version: string };
    return { available: true, version: pkg.version, providers: ort.listSupportedBackends() };
  } catch (err) {
    return { available: false, reason: onnxRuntimeLoadFailure(err) };
  }
}

export async function collectDoctorReport(): Promise<DoctorReport> {
  const [onnxruntime, npu] = await Promise.all([describeOnnxRuntime(), describeNpu()]);
  return { serveFn: SERVER_IDENTITY.serverVersion, node: process.version, onnxruntime, npu, ge: describeGe() };
}

/** `serve-fn doctor`: which backends this machine can run, and why not where it cannot. */
export async function doctorCommand(options: { json: boolean }): Promise<void> {
  const report = await collectDoctorReport();
  if (options.json) {
    process.stdout.write(`${JSON.stringify(report, null, 2)}\n`);
    return;
  }
  const { onnxruntime: ort, npu } = report;
  const lines = [`serve-fn ${report.serveFn}`, `Node.js ${report.node}`];
  if (ort.available) {
    const providers = ort.providers!.map((p) => `${p.name}${p.bundled ? '' : ' (needs its provider library)'}`).join(', ');
    lines.push(`ONNX Runtime ${ort.version}: available; execution providers: ${providers}`);
  } else {
    lines.push(`ONNX Runtime: not available (${ort.reason})`);
  }
  if (npu.available) {
    lines.push(`Ascend NPU: available; AscendCL ${npu.version ?? '(version unknown)'} at ${npu.libraryPath}; ${npu.deviceCount} device(s)`);
    for (const d of npu.devices ?? []) lines.push(`  npu:${d.id}  memory ${(d.memoryFree / 2 ** 30).toFixed(1)} GiB free of ${(d.memoryTotal / 2 ** 30).toFixed(1)} GiB`);
  } else {
    lines.push(`Ascend NPU: not available (${npu.reason})`);
  }
  const { ge } = report;
  if (ge.available) {
    const libraries = ge.libraries!.length > 0 ? ge.libraries!.join(', ') : 'not listed (no /proc/self/maps)';
    lines.push(`Ascend GE: available; built against ${ge.cannHome} (${ge.headers} headers); libraries in use: ${libraries}`);
  } else {
    lines.push(`Ascend GE: not available (${ge.reason})`);
  }
  process.stdout.write(`${lines.join('\n')}\n`);
}
