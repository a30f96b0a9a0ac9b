import wavefile from 'wavefile';
import { describe, expect, it } from 'vitest';
import { DynamicBatcher, type BatcherHooks } from '../../../src/engine/dynamic-batcher.js';
import type { QueuedTensorRequest } from '../../../src/engine/instance-engine.js';
import { lengthBudget } from '../../../src/engine/length-batching.js';
import { normalizeBatchPolicy } from '../../../src/spec/batch-policy.js';
import { createTensor } from '../../../src/tensor/tensor-factory.js';
import { audioSeconds, SPEECH_BATCH_BY_LENGTH } from '../../../src/speech/speech-batching.js';
import { FakeClock } from '../../helpers/fake-clock.js';
import { settle } from '../../helpers/settle.js';

function wav(rate: number, channels: number, seconds: number): Uint8Array {
  const file = new wavefile.WaveFile();
  const frames = Math.round(rate * seconds);
  file.fromScratch(channels, rate, '16', channels === 1 ? new Int16Array(frames) : Array.from({ length: channels }, () => new Int16Array(frames)));
  return file.toBuffer();
}

/** A speech model's queued request, as SpeechModel.transcribe sends it. */
function queued(audio: Uint8Array, sampleRate = 0): QueuedTensorRequest {
  const inputs = [createTensor('AUDIO', 'BYTES', [1, 1], [audio]), createTensor('SAMPLE_RATE', 'INT32', [1, 1], Int32Array.of(sampleRate))];
  return { request: { wire: { inputs, outputs: [], parameters: {} }, rows: 1, signature: 'speech' } } as unknown as QueuedTensorRequest;
}

describe('speech batches formed by audio length', () => {
  it('reads an utterance\'s seconds without decoding it: a WAV file from its byte rate, PCM from its SAMPLE_RATE', () => {
    expect(audioSeconds(queued(wav(44100, 2, 1.5)).request)).toBeCloseTo(1.5, 2);
    expect(audioSeconds(queued(wav(8000, 1, 3)).request)).toBeCloseTo(3, 2);
    expect(audioSeconds(queued(new Uint8Array(32000), 8000).request)).toBe(2);
  });

  /** The batches a batcher of 4 rows forms from `lengths` (seconds), all queued while the instance is busy. */
  async function batches(lengths: readonly number[], budget?: BatcherHooks<QueuedTensorRequest, string>['budget']): Promise<number[][]> {
    const state = { idle: 0 };
    const sent: number[][] = [];
    const hooks: BatcherHooks<QueuedTensorRequest, string> = {
      idleInstances: () => state.idle,
      execute: async (entries) => {
        state.idle--;
        sent.push(entries.map((e) => audioSeconds(e.payload.request)));
        return entries.map(() => 'ok');
      },
      ...(budget ? { budget } : {}),
    };
    const batcher = new DynamicBatcher<QueuedTensorRequest, string>('speech', normalizeBatchPolicy({ maxBatchSize: 4, maxQueueDelayUs: 0 }, 'speech'), hooks, new FakeClock());
    const done = lengths.map((s) => batcher.submit(queued(wav(16000, 1, s))));
    while (sent.flat().length < lengths.length) {
      state.idle = 1;
      batcher.notifyIdle();
      await settle();
    }
    await Promise.all(done);
    return sent;
  }

  /** Seconds of padding: every row padded to its batch's longest. */
  const padding = (formed: number[][]): number => formed.reduce((sum, b) => sum + Math.max(...b) * b.length - b.reduce((a, x) => a + x, 0), 0);

  it('groups short utterances with short ones and long with long, so a batch of mixed lengths pads less than in arrival order', async () => {
    const lengths = [1, 8, 1.2, 7.5, 0.9, 8.2, 1.1, 7.8];
    const inArrivalOrder = await batches(lengths);
    const byLength = await batches(lengths, lengthBudget(SPEECH_BATCH_BY_LENGTH));
    expect(inArrivalOrder).toEqual([[1, 8, 1.2, 7.5], [0.9, 8.2, 1.1, 7.8]].map((b) => b.map((s) => expect.closeTo(s, 2))));
    expect(byLength.map((b) => b.length)).toEqual([4, 4]);
    expect(byLength[0].every((s) => s < 2)).toBe(true);
    expect(byLength[1].every((s) => s > 7)).toBe(true);
    expect(padding(byLength)).toBeLessThan(padding(inArrivalOrder) / 5);
  });
});
