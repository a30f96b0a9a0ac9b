import type { ValidatedRequest } from '../engine/instance-engine.js';
import type { LengthBatching } from '../engine/length-batching.js';
import { SPEECH_INPUTS } from './speech-tensors.js';

/**
 * Speech batches by audio length, as Triton's and FunASR's speech servers sort by length before
 * batching: every utterance of a batch is padded to its longest, so a batch is the oldest waiting
 * request and the queued ones nearest its length, for as long as at least half of the batch's
 * padded audio is its own (the engine's BatchFormation forms it; the oldest always goes, so none
 * waits for ever).
 */
export const SPEECH_BATCH_BY_LENGTH: LengthBatching = { minFill: 0.5, cost: audioSeconds };

/**
 * Seconds of a request's AUDIO, read without decoding it: raw PCM16 is 2 bytes a sample at
 * SAMPLE_RATE; a WAV file's length is its size over the byte rate in its `fmt ` chunk
 * (RIFF: bytes 28–31). Anything else counts its bytes as 16 kHz PCM16 would; its decoding fails
 * in the instance anyway.
 */
export function audioSeconds(request: ValidatedRequest): number {
  const audio = request.wire.inputs.find((t) => t.name === SPEECH_INPUTS.audio);
  const bytes = (audio?.data as Uint8Array[] | undefined)?.[0];
  if (!bytes) return 0;
  const rate = request.wire.inputs.find((t) => t.name === SPEECH_INPUTS.sampleRate);
  const sampleRate = Number((rate?.data as Int32Array | undefined)?.[0] ?? 0);
  if (sampleRate > 0) return bytes.length / (2 * sampleRate);
  const view = new DataView(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const riff = bytes.length >= 32 && view.getUint32(0, false) === 0x52494646 && view.getUint32(12, false) === 0x666d7420;
  const byteRate = riff ? view.getUint32(28, true) : 0;
  return bytes.length / (byteRate > 0 ? byteRate : 32_000);
}
