import type { BackendSession } from '../backends/backend.js';
import { createError } from '../errors/index.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import { paraformerSentence, paraformerTokens } from './paraformer-decoder.js';
import type { StreamingParaformerConfig } from './paraformer-online-config.js';
import { StreamingFrontEnd } from './paraformer-online-front-end.js';
import type { SpeechFolder } from './speech-folder.js';

/** FunASR's `chunk_size` in 60 ms LFR frames: look-back, chunk, look-ahead. */
export type ChunkSize = readonly [number, number, number];
export const DEFAULT_CHUNK_SIZE: ChunkSize = [5, 10, 5];

/** Below 60 ms of audio, a final call decodes only what the stream holds (funasr_onnx: `16 * 60` samples). */
const SHORT_FINAL_SAMPLES = 16 * 60;

/**
 * One stream's state between chunks, as funasr_onnx's `cache` dict holds it: the front end's
 * carry-over, the position of the next frame (`start_idx`), the overlap frames (`feats`: look-back
 * and look-ahead), the CIF integrator's leftover weight and hidden state, and one FSMN cache per
 * decoder block.
 */
export class ParaformerOnlineStream {
  readonly frontEnd: StreamingFrontEnd;
  startIdx = 0;
  /** Whether any frame has been encoded (funasr_onnx: `len(cache) > 0`). */
  started = false;
  overlap: Float32Array;
  cifAlpha = 0;
  cifHidden: Float32Array;
  decoderCaches: Float32Array[];

  constructor(
    folder: SpeechFolder,
    readonly chunkSize: ChunkSize,
  ) {
    const conf = folder.streaming!;
    this.frontEnd = new StreamingFrontEnd(folder.frontEnd, folder.cmvn);
    this.overlap = new Float32Array((chunkSize[0] + chunkSize[2]) * conf.featureDim);
    this.cifHidden = new Float32Array(conf.outputSize);
    this.decoderCaches = Array.from({ length: conf.decoderBlocks }, () => new Float32Array(conf.outputSize * conf.fsmnLorder));
  }
}

/**
 * A streaming Paraformer export (`model.onnx`: encoder + CIF weights; `decoder.onnx`: the SANM
 * decoder with its FSMN caches) run chunk by chunk, following funasr_onnx's
 * `paraformer_online_bin.Paraformer.__call__` (FunASR runtime/python/onnxruntime/funasr_onnx): each
 * chunk's frames are scaled by √output_size, get sinusoidal positions from `start_idx`, and are
 * encoded with the look-back and look-ahead frames of the overlap cache in front; the CIF predictor
 * integrates only the chunk's own frames, carrying its leftover into the next chunk; the decoder
 * reads its FSMN caches and returns them. The text returned is the chunk's new words. Batch 1 per
 * forward pass, as funasr_onnx's online model.
 */
export class ParaformerOnline {
  private readonly conf: StreamingParaformerConfig;
  private readonly decoderInputs: readonly string[];
  private readonly decoderOutputs: readonly string[];

  constructor(
    readonly folder: SpeechFolder,
    private readonly encoder: BackendSession,
    private readonly decoder: BackendSession,
  ) {
    this.conf = folder.streaming!;
    const invalid = (file: string, why: string): Error => createError('SF_ERR_SPEECH_FOLDER_INVALID', folder.dir, `its ${file} is not a streaming Paraformer export: ${why} (funasr/models/paraformer_streaming/export_meta.py names them)`);
    const encoderIo = [...encoder.metadata().inputs.map((i) => i.name), ...encoder.metadata().outputs.map((o) => o.name)];
    const lacking = ['speech', 'speech_lengths', 'enc', 'enc_len', 'alphas'].filter((n) => !encoderIo.includes(n));
    if (lacking.length > 0) throw invalid(folder.modelFile, `it lacks ${lacking.join(', ')}`);
    // funasr_onnx passes the decoder's inputs by position: enc, enc_len, acoustic_embeds, acoustic_embeds_len, then a cache per block.
    this.decoderInputs = decoder.metadata().inputs.map((i) => i.name);
    this.decoderOutputs = decoder.metadata().outputs.map((o) => o.name);
    const caches = this.conf.decoderBlocks;
    if (this.decoderInputs.length !== 4 + caches || this.decoderOutputs.length !== 2 + caches) {
      throw invalid(this.conf.decoderFile, `it has ${this.decoderInputs.length} inputs and ${this.decoderOutputs.length} outputs, where decoder_conf.num_blocks ${caches} gives ${4 + caches} and ${2 + caches}`);
    }
  }

  newStream(chunkSize: ChunkSize = DEFAULT_CHUNK_SIZE): ParaformerOnlineStream {
    return new ParaformerOnlineStream(this.folder, chunkSize);
  }

  /** The words `samples` (16 kHz, [-1, 1]) complete; `final` ends the stream and decodes its look-ahead. */
  async accept(stream: ParaformerOnlineStream, samples: Float32Array, final: boolean): Promise<string> {
    return paraformerSentence(await this.acceptPieces(stream, samples, final)).text;
  }

  /** As `accept`, the token pieces before FunASR's sentence_postprocess joins them. */
  async acceptPieces(stream: ParaformerOnlineStream, samples: Float32Array, final: boolean): Promise<string[]> {
    const [, chunk, ahead] = stream.chunkSize;
    const dim = this.conf.featureDim;
    if (final && stream.started && samples.length < SHORT_FINAL_SAMPLES) return this.infer(stream, stream.overlap, true);
    const feats = stream.frontEnd.accept(samples, final);
    const frames = feats.length / dim;
    if (frames === 0) return final && stream.started ? this.infer(stream, stream.overlap, true) : [];
    this.scaleAndPosition(feats, stream.startIdx);
    stream.startIdx += frames;
    stream.started = true;
    if (!final) return this.infer(stream, this.addOverlap(stream, feats, false, false), false);
    if (frames + ahead <= chunk) return this.infer(stream, this.addOverlap(stream, feats, true, true), true);
    // A final call with more than a chunk's worth: the first chunk, then the rest as the last chunk.
    const first = await this.infer(stream, this.addOverlap(stream, feats.subarray(0, Math.min(frames, chunk) * dim), true, false), false);
    const restFrames = frames + ahead - chunk;
    const last = await this.infer(stream, this.addOverlap(stream, feats.subarray((frames - restFrames) * dim), true, true), true);
    // funasr_onnx concatenates the two chunks' postprocessed strings; joining the pieces first keeps English words apart.
    return [...first, ...last];
  }

  /** feats × √output_size + SinusoidalPositionEncoderOnline at positions start_idx + 1, ... */
  private scaleAndPosition(feats: Float32Array, startIdx: number): void {
    const dim = this.conf.featureDim;
    const half = dim / 2;
    const scale = Math.sqrt(this.conf.outputSize);
    const increment = Math.log(10000) / (half - 1);
    for (let t = 0; t < feats.length / dim; t++) {
      const position = startIdx + t + 1;
      for (let k = 0; k < half; k++) {
        const angle = position * Math.exp(-k * increment);
        feats[t * dim + k] = feats[t * dim + k] * scale + Math.sin(angle);
        feats[t * dim + half + k] = feats[t * dim + half + k] * scale + Math.cos(angle);
      }
    }
  }

  /**
   * funasr_onnx's add_overlap_chunk: the cached look-back + look-ahead frames in front; the cache
   * keeps the last of them for the next chunk; a final chunk that is not the last is padded to a
   * whole window with zeros.
   */
  private addOverlap(stream: ParaformerOnlineStream, feats: Float32Array, isFinal: boolean, lastChunk: boolean): Float32Array {
    const [back, chunk, ahead] = stream.chunkSize;
    const dim = this.conf.featureDim;
    const joined = new Float32Array(stream.overlap.length + feats.length);
    joined.set(stream.overlap);
    joined.set(feats, stream.overlap.length);
    const keep = (isFinal ? back : back + ahead) * dim;
    stream.overlap = joined.slice(Math.max(0, joined.length - keep));
    if (!isFinal || lastChunk) return joined;
    const window = (back + chunk + ahead) * dim;
    if (joined.length >= window) return joined;
    const padded = new Float32Array(window);
    padded.set(joined);
    return padded;
  }

  private async infer(stream: ParaformerOnlineStream, feats: Float32Array, lastChunk: boolean): Promise<string[]> {
    const dim = this.conf.featureDim;
    const frames = feats.length / dim;
    const encoded = await this.encoder.run({
      speech: createTensor('speech', 'FP32', [1, frames, dim], feats),
      speech_lengths: createTensor('speech_lengths', 'INT32', [1], Int32Array.of(frames)),
    }, ['enc', 'enc_len', 'alphas']);
    const enc = float32(encoded.enc, 'enc');
    const alphas = Float32Array.from(float32(encoded.alphas, 'alphas').data);
    const embeds = this.cifSearch(stream, enc.data, alphas, lastChunk);
    const tokens = embeds.length / this.conf.outputSize;
    if (tokens === 0) return [];
    const [encName, encLenName, embedsName, embedsLenName, ...cacheNames] = this.decoderInputs;
    const H = this.conf.outputSize;
    const L = this.conf.fsmnLorder;
    const inputs: Record<string, Tensor> = {
      [encName]: createTensor(encName, 'FP32', enc.shape, enc.data),
      [encLenName]: encoded.enc_len,
      [embedsName]: createTensor(embedsName, 'FP32', [1, tokens, H], embeds),
      [embedsLenName]: createTensor(embedsLenName, 'INT32', [1], Int32Array.of(tokens)),
    };
    cacheNames.forEach((name, i) => (inputs[name] = createTensor(name, 'FP32', [1, H, L], stream.decoderCaches[i])));
    const decoded = await this.decoder.run(inputs, this.decoderOutputs);
    const [logitsName, , ...outCacheNames] = this.decoderOutputs;
    // Each returned cache holds the block's new frames after the old ones; the last lorder are kept.
    stream.decoderCaches = outCacheNames.map((name) => lastColumns(float32(decoded[name], name), L));
    const logits = float32(decoded[logitsName], logitsName);
    const vocab = logits.shape[2];
    return paraformerTokens(logits.data.subarray(0, tokens * vocab), vocab, tokens, 0, this.folder.tokens);
  }

  /**
   * funasr_onnx's cif_search: the chunk's weights outside [look-back, look-back + chunk) are zeroed,
   * the carried weight and hidden state go in front (and a tail of tail_threshold behind the last
   * chunk); weights integrate over the frames and every time they reach the threshold an acoustic
   * embedding fires, the weighted sum of the hidden states it spanned.
   */
  private cifSearch(stream: ParaformerOnlineStream, hidden: Float32Array, alphas: Float32Array, lastChunk: boolean): Float32Array {
    const H = this.conf.outputSize;
    const [back, chunk] = stream.chunkSize;
    for (let t = 0; t < alphas.length; t++) if (t < back || t >= back + chunk) alphas[t] = 0;
    const steps: { alpha: number; hidden: Float32Array }[] = [{ alpha: stream.cifAlpha, hidden: stream.cifHidden }];
    for (let t = 0; t < alphas.length; t++) steps.push({ alpha: alphas[t], hidden: hidden.subarray(t * H, (t + 1) * H) });
    if (lastChunk) steps.push({ alpha: this.conf.tailThreshold, hidden: new Float32Array(H) });
    const threshold = this.conf.cifThreshold;
    const fired: Float32Array[] = [];
    let integrate = 0;
    let frame = new Float32Array(H);
    for (const { alpha, hidden: h } of steps) {
      if (alpha + integrate < threshold) {
        integrate += alpha;
        for (let k = 0; k < H; k++) frame[k] += alpha * h[k];
      } else {
        for (let k = 0; k < H; k++) frame[k] += (threshold - integrate) * h[k];
        fired.push(frame);
        integrate += alpha - threshold;
        frame = Float32Array.from(h, (v) => integrate * v);
      }
    }
    stream.cifAlpha = integrate;
    stream.cifHidden = integrate > 0 ? frame.map((v) => v / integrate) : frame;
    const out = new Float32Array(fired.length * H);
    fired.forEach((f, i) => out.set(f, i * H));
    return out;
  }
}

function float32(tensor: Tensor | undefined, name: string): { data: Float32Array; shape: readonly number[] } {
  if (!tensor || !(tensor.data instanceof Float32Array)) throw new Error(`the streaming Paraformer's ${name} output is not FP32`);
  return { data: tensor.data, shape: tensor.shape };
}

/** [1, H, W] → its last `keep` columns, [1, H, keep]. */
function lastColumns(cache: { data: Float32Array; shape: readonly number[] }, keep: number): Float32Array {
  const [, rows, width] = cache.shape;
  const out = new Float32Array(rows * keep);
  for (let r = 0; r < rows; r++) out.set(cache.data.subarray(r * width + width - keep, (r + 1) * width), r * keep);
  return out;
}
