/** An OnnxDecoderRuntime over a tiny decoder folder, on the project's ONNX backend in the test's own thread. */
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { decoderLayout, OnnxDecoderRuntime, type DecoderSessionRun } from '../../src/instance/onnx-decoder-runtime.js';
import { writeDecoderFolder, type DecoderFolderOptions, type DecoderFolder } from '../fixtures/generation/decoder-folders.js';

/** `onRun` sees each run's feeds and outputs (tests of what the runtime feeds). */
export async function decoderRuntime(options: DecoderFolderOptions = {}, onRun?: (feeds: Parameters<DecoderSessionRun>[0], produced: Awaited<ReturnType<DecoderSessionRun>>) => void): Promise<{ runtime: OnnxDecoderRuntime; folder: DecoderFolder }> {
  const folder = writeDecoderFolder(join(mkdtempSync(join(tmpdir(), 'serve-fn-decoder-')), options.family ?? 'qwen3'), options);
  const session = await new OnnxBackend().load(join(folder.dir, options.modelPath ?? 'onnx/model.onnx'), { options: { intraOpNumThreads: 1 } });
  const { inputs, outputs } = session.metadata();
  const runtime = new OnnxDecoderRuntime(decoderLayout('tiny', inputs, outputs), async (feeds, names) => {
    const produced = await session.run(feeds, names);
    onRun?.(feeds, produced);
    return produced;
  });
  return { runtime, folder };
}

export function argmax(logits: ArrayLike<number>, from = 0, width = logits.length - from): number {
  let best = 0;
  for (let t = 1; t < width; t++) if (logits[from + t]! > logits[from + best]!) best = t;
  return best;
}

/** The largest |a - b| over a row. */
export function maxDifference(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < a.length; i++) max = Math.max(max, Math.abs(a[i]! - b[i]!));
  return max;
}
