import { createError, ServeFnError } from '../errors/index.js';
import { readModelFileMetadata } from '../model-repository/model-version-builder.js';
import type { SpeechFolder } from './speech-folder.js';
import { SPEECH_MAX_BATCH } from './speech-tensors.js';

/**
 * What the batcher of a speech folder served from a model.om must respect, read from the OM at
 * start-up on the server's thread: its dynamic-batch gears (the npu_om backend pads a batch of n
 * rows to the smallest gear ≥ n and refuses more than the largest, docs/npu.md), so the speech
 * batcher never forms more rows than the largest gear; and its fixed frames axis, which the
 * instance pads every row to (speech-recognizer.ts). No AscendCL library: SF_ERR_NPU_UNAVAILABLE,
 * naming the model.
 */
export async function omMaxBatchSize(folder: SpeechFolder, npuId: number, asked: number | undefined): Promise<number> {
  let metadata;
  try {
    metadata = await readModelFileMetadata(folder.modelFile, { kind: 'npu', id: npuId }, false);
  } catch (err) {
    if (err instanceof ServeFnError && err.code === 'SF_ERR_NPU_UNAVAILABLE') {
      const reason = err.message.replace(/^Ascend NPU backend is not available: /, '');
      throw createError('SF_ERR_NPU_UNAVAILABLE', `speech model '${folder.name}' is served from ${folder.modelFile}, which needs it (${reason})`, { cause: err });
    }
    throw err;
  }
  const speech = metadata.inputs.find((i) => i.name === 'speech');
  const invalid = (why: string): Error => createError('SF_ERR_SPEECH_FOLDER_INVALID', folder.dir, `its model.om ${why}`);
  if (!speech) throw invalid('has no input named speech');
  if (speech.shape.slice(1).some((d) => d < 1)) throw invalid(`has a speech input of shape [${speech.shape.join(', ')}]: compile it with a fixed frames axis (e.g. --input_shape "speech:-1,500,560;speech_lengths:-1" with --dynamic_batch_size), since the npu_om backend takes no dynamic dims`);
  // A static OM runs its exact batch, and only the gears' path pads rows: a static one must be of batch 1.
  const largest = metadata.batchSizes?.length ? Math.max(...metadata.batchSizes) : speech.shape[0];
  if (!metadata.batchSizes?.length && largest !== 1) throw invalid(`is static with a batch of ${largest} rows: compile it with --dynamic_batch_size, or for batch 1`);
  if (asked !== undefined && asked > largest) throw invalid(`was compiled for batches of at most ${largest} rows (its largest gear), under the ${asked} asked for; ask for at most ${largest}`);
  return Math.min(asked ?? SPEECH_MAX_BATCH, largest);
}
