import type { StreamingVad, VadEvent } from '../adapters/funasr/streaming-vad.js';

/**
 * The segmentation of an ASR folder served without a VAD model: the whole utterance, from its
 * first sample to `{"is_speaking": false}`, is one segment, decoded once at the end, with no
 * segmentation the client did not ask for.
 */
export class WholeUtteranceVad implements StreamingVad {
  processedSamples = 0;

  async push(samples: Float32Array): Promise<readonly VadEvent[]> {
    const first = this.processedSamples === 0;
    this.processedSamples += samples.length;
    return first ? [{ kind: 'start', sample: 0 }] : [];
  }

  async finish(): Promise<readonly VadEvent[]> {
    return this.processedSamples === 0 ? [] : [{ kind: 'end', sample: this.processedSamples }];
  }
}
