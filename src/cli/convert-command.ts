import { statSync } from 'node:fs';
import { basename, resolve } from 'node:path';
import { InvalidArgumentError } from 'commander';
import type { NpuNativeBinding } from '../backends/npu/native-binding.js';
import { loadNatively } from '../backends/npu/npu-errors.js';
import { geBinding } from '../backends/npu/npu-library.js';
import { createError } from '../errors/index.js';

/**
 * `serve-fn convert`: ONNX → Ascend `.om`, the job of CANN's ATC (`atc --framework=5`), done through
 * GE's IR build API in the GE build of the addon: aclgrphParseONNX, aclgrphBuildModel and
 * aclgrphSaveModel (hicann/ge, branch 8.5.0: inc/external/ge/ge_ir_build.h,
 * inc/parser/external/parser/onnx_parser.h).
 *
 * The flags carry ATC's names (CANN 8.5.0 ATC guide, command-line options:
 * https://www.hiascend.com/document/detail/en/canncommercial/850/devaids/atctool/atlasatcparam_16_0018.html
 * and its neighbours); ATC itself accepts `--soc-version` for `--soc_version`. Each flag becomes the
 * ge::ir_option key ATC sets for it (hicann/metadef, branch 8.5.0:
 * inc/external/ge_common/ge_api_types.h, namespace ir_option).
 */

/** The ge::ir_option keys the flags set, as their values read in ge_api_types.h. */
export const IR_OPTION = {
  socVersion: 'ge.socVersion',
  inputShape: 'input_shape',
  dynamicBatchSize: 'ge.dynamicBatchSize',
  precisionMode: 'ge.exec.precision_mode',
  precisionModeV2: 'ge.exec.precision_mode_v2',
} as const;

/**
 * With neither precision flag, serve-fn asks for `origin`: the model's float32 stays float32, so an
 * `.om` converted here answers like the ONNX model under ONNX Runtime, and like `npu_ge` by default
 * (docs/npu.md, "Precision"). ATC's own default for inference is fp16 (`--precision_mode
 * force_fp16`); `--precision-mode force_fp16` asks for it.
 */
export const DEFAULT_PRECISION_MODE_V2 = 'origin';

export interface ConvertOptions {
  /** ATC --soc_version, e.g. Ascend310P3 (`npu-smi info` names the chip). */
  readonly socVersion: string;
  /** The .om to write, as the user gave it (GE's aclgrphSaveModel adds `.om` where it is missing, as ATC's --output does). */
  readonly output: string;
  /** ATC --input_shape: `name:d0,d1,…;name2:…`, -1 for the batch of --dynamic-batch-size. */
  readonly inputShape?: string;
  /** ATC --dynamic_batch_size: the batch gears, e.g. `1,4,8`. */
  readonly dynamicBatchSize?: string;
  readonly precisionMode?: string;
  readonly precisionModeV2?: string;
  /** More ge::ir_option entries for aclgrphBuildModel; they win over the flags above. */
  readonly options?: Readonly<Record<string, string>>;
  /** A binding to use instead of the built addon (tests). */
  readonly binding?: NpuNativeBinding;
}

/** commander parser of the model argument: an existing file, refused before anything loads. */
export function existingFile(value: string): string {
  let isFile = false;
  try {
    isFile = statSync(value).isFile();
  } catch {
    // No such path: refused below like a directory.
  }
  if (!isFile) throw new InvalidArgumentError(`no ONNX model file at ${resolve(value)}`);
  return value;
}

/** commander parser of --dynamic-batch-size: ATC's list of gears, each a positive batch size. */
export function batchGears(value: string): string {
  if (!/^\s*[1-9]\d*(\s*,\s*[1-9]\d*)*\s*$/.test(value)) throw new InvalidArgumentError('expected batch sizes separated by commas, e.g. "1,4,8"');
  return value.replace(/\s+/g, '');
}

/** commander parser of the repeatable --option key=value, collected into one record. */
export function irOption(value: string, all: Readonly<Record<string, string>> | undefined): Record<string, string> {
  const eq = value.indexOf('=');
  if (eq <= 0) throw new InvalidArgumentError('expected key=value, e.g. ge.exec.op_precision_mode=high_precision');
  return { ...all, [value.slice(0, eq)]: value.slice(eq + 1) };
}

/** Why ATC would refuse this combination of flags, or undefined. */
export function flagConflict(options: Pick<ConvertOptions, 'inputShape' | 'dynamicBatchSize'>): string | undefined {
  if (options.dynamicBatchSize !== undefined && !/(^|[:,])\s*-1\s*(,|;|$)/.test(options.inputShape ?? '')) {
    return '--dynamic-batch-size needs --input-shape with -1 as the batch dimension, e.g. --input-shape "x:-1,3,224,224"';
  }
  return undefined;
}

/** The aclgrphBuildModel options for the flags. */
export function convertBuildOptions(options: ConvertOptions): Record<string, string> {
  const build: Record<string, string> = { [IR_OPTION.socVersion]: options.socVersion };
  if (options.inputShape !== undefined) build[IR_OPTION.inputShape] = options.inputShape;
  if (options.dynamicBatchSize !== undefined) build[IR_OPTION.dynamicBatchSize] = options.dynamicBatchSize;
  if (options.precisionMode !== undefined) build[IR_OPTION.precisionMode] = options.precisionMode;
  else build[IR_OPTION.precisionModeV2] = options.precisionModeV2 ?? DEFAULT_PRECISION_MODE_V2;
  return { ...build, ...options.options };
}

/** Converts one ONNX file; resolves to the .om GE wrote. */
export async function convertModel(model: string, options: ConvertOptions): Promise<string> {
  const loaded = geBinding(options.binding, 'convertGeModel');
  if ('reason' in loaded) throw createError('SF_ERR_NPU_UNAVAILABLE', loaded.geMissing ? `${loaded.reason}; serve-fn convert needs it` : loaded.reason);
  // ATC hands --input_shape to the ONNX parser as well, so the parsed graph already has the gear dimension.
  const parserOptions: Record<string, string> = options.inputShape === undefined ? {} : { [IR_OPTION.inputShape]: options.inputShape };
  const written = await loadNatively('npu_ge', basename(model), () =>
    loaded.binding.convertGeModel({
      file: resolve(model),
      output: options.output,
      parserOptions,
      buildOptions: convertBuildOptions(options),
    }),
  );
  return written.file;
}

/** The CLI action: converts, then names the file written. */
export async function convertCommand(model: string, options: ConvertOptions): Promise<void> {
  const file = await convertModel(model, options);
  process.stdout.write(`wrote ${file}\n`);
}
