import type { StreamingVad, VadEvent } from '../adapters/funasr/streaming-vad.js';
import type { ServedModel } from '../inference/served-model.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import type { VadBoundary } from './fsmn-vad-state-machine.js';
import { CHAIN_TENSORS } from './speech-chain-tensors.js';
import type { SpeechModel, SpeechRequest } from './speech-model.js';
import { stampSentences } from './stamp-sentences.js';
import type { Transcription } from './transcription.js';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
/** FunASR's models run at 16 kHz; a VAD boundary in ms is 16 samples a ms. */
const SAMPLES_PER_MS = 16;
let nextStream = 1;

/**
 * VAD → ASR per segment → punctuation, as FunASR's 2pass server chains its models (runtime/websocket/
 * bin/websocket-server-2pass.cpp over funasrruntime.cpp's FunTpassInferBuffer): the FSMN-VAD model
 * segments the audio, each segment is transcribed whole by the ASR model, and the punctuation model
 * punctuates each segment's text. Every model is a model version on the engine (its own instances,
 * queue and batcher), so segments of one file share forward passes through the ASR model's batcher.
 */
export class SpeechChain {
  constructor(
    readonly vad: ServedModel | undefined,
    readonly punctuation: ServedModel | undefined,
  ) {}

  /** A whole file: its VAD segments, each transcribed and punctuated; `segments` in seconds. */
  async transcribe(asr: SpeechModel, request: SpeechRequest): Promise<Transcription> {
    if (!this.vad) return this.segment(asr, request);
    const id = `vad-file-${nextStream++}`;
    const produced = await this.vadRequest(id, request.audio, request.sampleRate ?? 0, true, true, request.signal);
    const flat = produced.find((o) => o.name === CHAIN_TENSORS.segments)!.data as Int32Array;
    const spans = Array.from({ length: flat.length / 2 }, (_, i) => [flat[2 * i], flat[2 * i + 1]] as const);
    const pcm = new Int16Array(Uint8Array.from(bytes(produced, CHAIN_TENSORS.pcm16k)).buffer);
    const parts = await Promise.all(spans.map(async ([start, end]) => {
      const cut = pcm.subarray(Math.min(pcm.length, start * SAMPLES_PER_MS), Math.min(pcm.length, end * SAMPLES_PER_MS));
      const result = await this.segment(asr, { ...request, audio: new Uint8Array(cut.buffer, cut.byteOffset, cut.byteLength), sampleRate: 16_000 });
      return { start, end, result };
    }));
    const duration = pcm.length / 16_000;
    const spoken = parts.filter((p) => p.result.text !== '');
    const first = spoken[0]?.result;
    const timestamp = spoken.flatMap((p) => (p.result.timestamp ?? []).map(([a, b]) => [a + p.start, b + p.start] as [number, number]));
    const stampSents = spoken.flatMap((p) => (p.result.stampSents ?? []).map((s) => ({ ...s, start: s.start + p.start, end: s.end + p.start, ts_list: s.ts_list.map(([a, b]) => [a + p.start, b + p.start] as const) })));
    const words = spoken.flatMap((p) => (p.result.words ?? []).map((w) => ({ ...w, start: w.start + p.start / 1000, end: w.end + p.start / 1000 })));
    return {
      text: join(spoken.map((p) => p.result.text)),
      richText: join(spoken.map((p) => p.result.richText)),
      duration,
      ...(first?.language ? { language: first.language, emotion: first.emotion, event: first.event, itn: first.itn } : {}),
      ...(spoken.some((p) => p.result.timestamp) ? { timestamp, words } : {}),
      ...(spoken.some((p) => p.result.stampSents) ? { stampSents } : {}),
      segments: spoken.map((p) => ({ start: p.start / 1000, end: p.end / 1000, text: p.result.text })),
    };
  }

  /** One segment (or a whole utterance, with no VAD served): the ASR model, then punctuation and FunASR's stamp_sents. */
  async segment(asr: SpeechModel, request: SpeechRequest): Promise<Transcription> {
    const result = await asr.transcribeUtterance(request);
    // SenseVoice writes its own punctuation with ITN; FunASR's runtimes punctuate Paraformer's text.
    if (!this.punctuation || asr.folder.kind === 'SenseVoiceSmall' || result.text === '') return result;
    const punctuated = await this.punctuate(result.text, request.signal);
    const stampSents = result.timestamp ? stampSentences(punctuated, result.timestamp) : undefined;
    return { ...result, text: punctuated, richText: punctuated, ...(stampSents ? { stampSents } : {}) };
  }

  async punctuate(text: string, signal?: AbortSignal): Promise<string> {
    const response = await this.punctuation!.infer({ inputs: [createTensor(CHAIN_TENSORS.text, 'BYTES', [1, 1], [encoder.encode(text)])], signal });
    return decoder.decode((response.outputs.find((o) => o.name === CHAIN_TENSORS.punctuated)!.data as Uint8Array[])[0]);
  }

  /** A live stream's VAD for FunASR's WebSocket sessions, or undefined when no VAD is served. */
  streamingVad(): ReleasableVad | undefined {
    return this.vad ? new FsmnStreamingVad(this, `vad-stream-${nextStream++}`) : undefined;
  }

  async vadRequest(id: string, audio: Uint8Array, sampleRate: number, start: boolean, end: boolean, signal?: AbortSignal): Promise<readonly Tensor[]> {
    const response = await this.vad!.infer({
      inputs: [createTensor(CHAIN_TENSORS.audio, 'BYTES', [1], [audio]), createTensor(CHAIN_TENSORS.sampleRate, 'INT32', [1], Int32Array.of(sampleRate))],
      // Only a stream's END request answers its segments and audio.
      outputs: (end ? [CHAIN_TENSORS.boundaries, CHAIN_TENSORS.segments, CHAIN_TENSORS.pcm16k] : [CHAIN_TENSORS.boundaries]).map((name) => ({ name })),
      parameters: { sequence_id: id, sequence_start: start, sequence_end: end },
      signal,
    });
    return response.outputs;
  }
}

/** A stream's VAD whose state lives in a model instance, which `release` frees when its client goes away before the stream's end. */
export interface ReleasableVad extends StreamingVad {
  release(): Promise<void>;
}

/** FunASR's WebSocket adapter's VAD over the served FSMN-VAD model: each pushed chunk is one request of the stream's sequence. */
class FsmnStreamingVad implements ReleasableVad {
  processedSamples = 0;
  private started = false;
  private ended = false;

  constructor(
    private readonly chain: SpeechChain,
    private readonly id: string,
  ) {}

  async push(samples: Float32Array): Promise<readonly VadEvent[]> {
    return this.send(samples, false);
  }

  async finish(): Promise<readonly VadEvent[]> {
    return this.send(new Float32Array(0), true);
  }

  /**
   * Ends the stream's sequence with an empty END request if it is open (its START sent, no END yet),
   * so the instance drops the stream's state now: the client is gone. As Triton's sequence batcher,
   * the END runs after the stream's request in flight, if any.
   */
  async release(): Promise<void> {
    if (!this.started || this.ended) return;
    this.ended = true;
    await this.chain.vadRequest(this.id, new Uint8Array(0), 16_000, false, true);
  }

  private async send(samples: Float32Array, end: boolean): Promise<VadEvent[]> {
    const pcm = new Int16Array(samples.length);
    for (let i = 0; i < samples.length; i++) pcm[i] = Math.max(-32768, Math.min(32767, Math.round(samples[i] * 32768)));
    // Marked before the request goes: once submitted its sequence is live, and release() must end it.
    const start = !this.started;
    this.started = true;
    this.ended ||= end;
    const outputs = await this.chain.vadRequest(this.id, new Uint8Array(pcm.buffer), 16_000, start, end);
    this.processedSamples += samples.length;
    const boundaries = JSON.parse(text(outputs, CHAIN_TENSORS.boundaries)) as VadBoundary[];
    return boundaries.map((b) => ({ kind: b.kind, sample: Math.min(this.processedSamples, b.ms * SAMPLES_PER_MS) }));
  }
}

function bytes(outputs: readonly Tensor[], name: string): Uint8Array {
  return (outputs.find((o) => o.name === name)!.data as Uint8Array[])[0];
}

function text(outputs: readonly Tensor[], name: string): string {
  return decoder.decode(bytes(outputs, name));
}

/** Segment texts joined as FunASR joins words: a space between two ASCII words, none next to CJK text. */
function join(texts: readonly string[]): string {
  return texts.reduce((all, t) => (all === '' ? t : /[\x21-\x7e]$/.test(all) && /^[\x21-\x7e]/.test(t) ? `${all} ${t}` : all + t), '');
}
