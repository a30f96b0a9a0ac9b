import { copyFileSync, mkdirSync, readFileSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import { staticFramesOnnx } from '../helpers/speech-python.js';
import { writeSimModel } from './sim/om-writer.js';

/** The compiled frames axis: 100 LFR frames hold 6.015 s (25 ms + 599 × 10 ms of fbank frames). */
export const FRAMES = 100;
export const GEARS = [1, 2, 4];

/**
 * A FunASR folder `dir` made from the tiny export `onnxFolder` (funasr-models.py), holding model.om
 * instead of model.onnx: its graph with the frames axis fixed at FRAMES, in a simulated OM with
 * GEARS (test/native/sim/README.md, format 2), as ATC compiles it with --input_shape and
 * --dynamic_batch_size.
 */
export function omFolder(onnxFolder: string, dir: string): string {
  mkdirSync(dir);
  for (const file of ['config.yaml', 'am.mvn', 'tokens.json']) copyFileSync(join(onnxFolder, file), join(dir, file));
  const fixed = join(dirname(dir), `${basename(onnxFolder)}-static.onnx`);
  staticFramesOnnx(join(onnxFolder, 'model.onnx'), FRAMES, fixed);
  writeSimModel(join(dir, 'model.om'), { op: 'onnx', onnx: readFileSync(fixed), batchGears: GEARS });
  return dir;
}
