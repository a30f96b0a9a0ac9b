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

/** One forward pass of one stream: its encoder window (overlap and chunk frames) and whether it is the stream's last. */
interface ChunkPass {
  readonly stream: ParaformerOnlineStream;
  readonly feats: Float32Array;
  readonly lastChunk: boolean;
}

/** A row of a decoder call: the pass it answers, its encoder output and CIF embeddings. */
interface DecoderRow {
  readonly index: number;
  readonly hidden: Float32Array;
  readonly encFrames: number;
  readonly encLen: number;
  /** The encoder's enc_len type, which the decoder's input has (int32 in FunASR's export). */
  readonly encLenType: string;
  readonly embeds: Float32Array;
  readonly tokens: number;
}

/**
 * A streaming Paraformer export (`model.onnx`: encoder + CIF weights; `decoder.onnx`: the SANM
 * decoder with its FSMN caches) run chunk by chunk, following funasr_onnx's
 * `paraformer_online_bin.Paraformer.__call__` (FunASR runtime/python/onnxruntime/funasr_onnx): each
 * chunk's frames are scaled by √output_size, get sinusoidal positions from `start_idx`, and are
 * encoded with the look-back and look-ahead frames of the overlap cache in front; the CIF predictor
 * integrates only the chunk's own frames, carrying its leftover into the next chunk; the decoder
 * reads its FSMN caches and returns them. The text returned is the chunk's new words. funasr_onnx
 * runs one stream per forward pass; `acceptChunks` stacks the passes of several streams as rows.
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
    const [pieces] = await this.acceptChunks([{ stream, pieces: [{ samples, final }] }]);
    return pieces;
  }

  /**
   * Chunks of several streams at once, each stream's pieces of audio in order: every stream's
   * n-th forward pass runs in one encoder call (and one decoder call) with the others' n-th, rows
   * of equal shape together (Triton's equal-shape rule); each row keeps its own overlap, positions,
   * CIF carry and decoder caches, so every stream decodes exactly as alone. Each stream appears
   * once (a stream's passes depend on each other's state); one list of token pieces per stream.
   */
  async acceptChunks(work: readonly { readonly stream: ParaformerOnlineStream; readonly pieces: readonly { readonly samples: Float32Array; readonly final: boolean }[] }[]): Promise<string[][]> {
    if (new Set(work.map((w) => w.stream)).size !== work.length) throw new Error('a stream may have one batch row at a time');
    // The passes are planned first: what the encoder is given depends on the front end and the overlap only, not on earlier passes' outputs.
    const planned = work.map(({ stream, pieces }) => pieces.flatMap(({ samples, final }) => this.plan(stream, samples, final)));
    const out = work.map((): string[] => []);
    for (let round = 0; planned.some((passes) => round < passes.length); round++) {
      const rows = planned.flatMap((passes, i) => (round < passes.length ? [{ pass: passes[round], into: i }] : []));
      const results = await this.inferRows(rows.map((r) => r.pass));
      // funasr_onnx concatenates two passes' postprocessed strings; joining the pieces first keeps English words apart.
      rows.forEach((row, i) => out[row.into].push(...results[i]));
    }
    return out;
  }

  /** funasr_onnx's `__call__` up to its `infer` calls: the forward passes `samples` need, in order. */
  private plan(stream: ParaformerOnlineStream, samples: Float32Array, final: boolean): ChunkPass[] {
    const [, chunk, ahead] = stream.chunkSize;
    const dim = this.conf.featureDim;
    const pass = (feats: Float32Array, lastChunk: boolean): ChunkPass => ({ stream, feats, lastChunk });
    if (final && stream.started && samples.length < SHORT_FINAL_SAMPLES) return [pass(stream.overlap, true)];
    const feats = stream.frontEnd.accept(samples, final);
    const frames = feats.length / dim;
    if (frames === 0) return final && stream.started ? [pass(stream.overlap, true)] : [];
    this.scaleAndPosition(feats, stream.startIdx);
    stream.startIdx += frames;
    stream.started = true;
    if (!final) return [pass(this.addOverlap(stream, feats, false, false), false)];
    if (frames + ahead <= chunk) return [pass(this.addOverlap(stream, feats, true, true), true)];
    // A final call with more than a chunk's worth: the first chunk, then the rest as the last chunk.
    const first = pass(this.addOverlap(stream, feats.subarray(0, Math.min(frames, chunk) * dim), true, false), false);
    const restFrames = frames + ahead - chunk;
    return [first, pass(this.addOverlap(stream, feats.subarray((frames - restFrames) * dim), true, true), true)];
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

  /** One forward pass of each row (of distinct streams): rows of equal frames share an encoder call, rows of equal frames and tokens a decoder call. */
  private async inferRows(rows: readonly ChunkPass[]): Promise<string[][]> {
    const dim = this.conf.featureDim;
    const out = rows.map((): string[] => []);
    const decodes: DecoderRow[] = [];
    for (const group of groupBy(rows.map((_, i) => i), (i) => rows[i].feats.length / dim)) {
      const frames = rows[group[0]].feats.length / dim;
      const encoded = await this.encoder.run({
        speech: createTensor('speech', 'FP32', [group.length, frames, dim], concat(group.map((i) => rows[i].feats))),
        speech_lengths: createTensor('speech_lengths', 'INT32', [group.length], new Int32Array(group.length).fill(frames)),
      }, ['enc', 'enc_len', 'alphas']);
      const enc = float32(encoded.enc, 'enc');
      const alphas = float32(encoded.alphas, 'alphas').data;
      const encFrames = enc.shape[1];
      const encLen = encoded.enc_len;
      group.forEach((i, r) => {
        const hidden = enc.data.subarray(r * encFrames * this.conf.outputSize, (r + 1) * encFrames * this.conf.outputSize);
        const embeds = this.cifSearch(rows[i].stream, hidden, alphas.slice(r * encFrames, (r + 1) * encFrames), rows[i].lastChunk);
        const tokens = embeds.length / this.conf.outputSize;
        if (tokens > 0) decodes.push({ index: i, hidden, encFrames, encLen: encLen ? rowOf(encLen, r) : frames, encLenType: encLen?.datatype ?? 'INT32', embeds, tokens });
      });
    }
    for (const group of groupBy(decodes, (d) => `${d.encFrames}/${d.tokens}`)) {
      const pieces = await this.decode(rows, group);
      group.forEach((d, r) => (out[d.index] = pieces[r]));
    }
    return out;
  }

  /** The SANM decoder over rows of equal encoder frames and tokens, each with its stream's FSMN caches, which it updates. */
  private async decode(rows: readonly ChunkPass[], group: readonly DecoderRow[]): Promise<string[][]> {
    const [encName, encLenName, embedsName, embedsLenName, ...cacheNames] = this.decoderInputs;
    const H = this.conf.outputSize;
    const L = this.conf.fsmnLorder;
    const B = group.length;
    const { encFrames, tokens } = group[0];
    const inputs: Record<string, Tensor> = {
      [encName]: createTensor(encName, 'FP32', [B, encFrames, H], concat(group.map((d) => d.hidden))),
      [encLenName]: group[0].encLenType === 'INT64' ? createTensor(encLenName, 'INT64', [B], BigInt64Array.from(group, (d) => BigInt(d.encLen))) : createTensor(encLenName, 'INT32', [B], Int32Array.from(group, (d) => d.encLen)),
      [embedsName]: createTensor(embedsName, 'FP32', [B, tokens, H], concat(group.map((d) => d.embeds))),
      [embedsLenName]: createTensor(embedsLenName, 'INT32', [B], new Int32Array(B).fill(tokens)),
    };
    cacheNames.forEach((name, c) => (inputs[name] = createTensor(name, 'FP32', [B, H, L], concat(group.map((d) => rows[d.index].stream.decoderCaches[c])))));
    const decoded = await this.decoder.run(inputs, this.decoderOutputs);
    const [logitsName, , ...outCacheNames] = this.decoderOutputs;
    const logits = float32(decoded[logitsName], logitsName);
    const caches = outCacheNames.map((name) => float32(decoded[name], name));
    const vocab = logits.shape[2];
    return group.map((d, r) => {
      // Each returned cache holds the block's new frames after the old ones; the last lorder are kept.
      rows[d.index].stream.decoderCaches = caches.map((cache) => lastColumns(cache, r, L));
      return paraformerTokens(logits.data.subarray(r * tokens * vocab, (r + 1) * tokens * vocab), vocab, tokens, 0, this.folder.tokens);
    });
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

/** Row `row` of [B, H, W] → its last `keep` columns, [H, keep]. */
function lastColumns(cache: { data: Float32Array; shape: readonly number[] }, row: number, keep: number): Float32Array {
  const [, rows, width] = cache.shape;
  const base = row * rows * width;
  const out = new Float32Array(rows * keep);
  for (let r = 0; r < rows; r++) out.set(cache.data.subarray(base + r * width + width - keep, base + (r + 1) * width), r * keep);
  return out;
}

/** Row `row` of a [B] length tensor. */
function rowOf(lengths: Tensor, row: number): number {
  return Number((lengths.data as ArrayLike<number | bigint>)[row]);
}

function concat(parts: readonly Float32Array[]): Float32Array {
  const out = new Float32Array(parts.reduce((n, p) => n + p.length, 0));
  let at = 0;
  for (const part of parts) {
    out.set(part, at);
    at += part.length;
  }
  return out;
}

/** `items` in groups of equal key, each in the items' order. */
function groupBy<T>(items: readonly T[], key: (item: T) => number | string): T[][] {
  const groups = new Map<number | string, T[]>();
  for (const item of items) {
    const k = key(item);
    const group = groups.get(k);
    if (group) group.push(item);
    else groups.set(k, [item]);
  }
  return [...groups.values()];
}
