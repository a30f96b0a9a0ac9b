import type { BackendSession } from '../backends/backend.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import { applyCmvn, type Cmvn } from './cmvn.js';
import { FsmnVadStateMachine, type VadBoundary, type VadOptions } from './fsmn-vad-state-machine.js';
import { FUNASR_FBANK, KaldiFbank } from './kaldi-fbank.js';
import type { FrontEndConfig } from './speech-front-end.js';

/** The FSMN encoder's cache shape, config.yaml's `encoder_conf` (fsmn_layers 4, proj_dim 128, lorder 20 in FunASR's template). */
export interface FsmnCacheShape {
  readonly layers: number;
  readonly projDim: number;
  readonly lorder: number;
}

/** What one FSMN-VAD stream needs: its folder's front end, CMVN, cache shape and `model_conf`. */
export interface FsmnVadConfig {
  readonly frontEnd: FrontEndConfig;
  readonly cmvn: Cmvn;
  readonly cache: FsmnCacheShape;
  readonly vad: VadOptions;
}

/**
 * One audio stream through FSMN-VAD (FunASR's Fsmn_vad_online, funasr_onnx/vad_bin.py): 16 kHz
 * samples in, in any chunks; Kaldi fbank frames as their 25 ms of audio arrive, low frame rate
 * stacking as soon as a stack's last frame exists, CMVN, then the ONNX model with this stream's four
 * FSMN caches (`in_cache0..3` → `out_cache0..3`), and FunASR's state machine on its scores. The
 * FSMN only looks back (rorder 0), so the scores, and the segments, are the same in any chunking
 * as over the whole utterance. The last frame is held until the next arrives or the stream ends,
 * since FunASR treats a stream's last frame apart.
 */
export class FsmnVadStream {
  private readonly fbank: KaldiFbank;
  private readonly machine: FsmnVadStateMachine;
  private caches: Tensor[];
  /** Samples not yet behind a whole frame's start, from stream sample `pendingAt`. */
  private pending = new Float32Array(0);
  private pendingAt = 0;
  private fbankFrames = 0;
  /** Fbank frames kept for stacking, from frame `keptAt`; and their decibels. */
  private kept: Float32Array[] = [];
  private keptAt = 0;
  private decibels: number[] = [];
  private stacked = 0;
  /** The last scored frame, held for `finish`. */
  private held?: { silence: number; decibel: number };

  constructor(
    private readonly config: FsmnVadConfig,
    private readonly session: BackendSession,
  ) {
    const { frontEnd } = config;
    this.fbank = new KaldiFbank({ ...FUNASR_FBANK, numMelBins: frontEnd.numMelBins, frameLengthMs: frontEnd.frameLengthMs, frameShiftMs: frontEnd.frameShiftMs });
    this.machine = new FsmnVadStateMachine(config.vad);
    const { layers, projDim, lorder } = config.cache;
    this.caches = Array.from({ length: layers }, (_, i) => createTensor(`in_cache${i}`, 'FP32', [1, projDim, lorder - 1, 1], new Float32Array(projDim * (lorder - 1))));
  }

  /** The stream's next samples, in [-1, 1] at 16 kHz: the segment boundaries they reveal. */
  async push(samples: Float32Array): Promise<VadBoundary[]> {
    const joined = new Float32Array(this.pending.length + samples.length);
    joined.set(this.pending);
    joined.set(samples, this.pending.length);
    const frames = this.fbank.frameCount(joined.length);
    if (frames > 0) {
      const scaled = Float32Array.from(joined.subarray(0, (frames - 1) * this.fbank.frameShift + this.fbank.frameLength), (x) => x * 32768);
      const mel = this.fbank.compute(scaled);
      const bins = this.config.frontEnd.numMelBins;
      for (let f = 0; f < frames; f++) {
        this.kept.push(mel.subarray(f * bins, (f + 1) * bins));
        this.decibels.push(decibel(joined, f * this.fbank.frameShift, this.fbank.frameLength));
      }
      this.fbankFrames += frames;
      this.pending = joined.slice(frames * this.fbank.frameShift);
      this.pendingAt += frames * this.fbank.frameShift;
    } else {
      this.pending = joined;
    }
    return this.score(false);
  }

  /** The stream has ended: the last stacks, the last frame, and every boundary still open. */
  async finish(): Promise<VadBoundary[]> {
    const boundaries = await this.score(true);
    if (!this.held) return boundaries;
    const last = this.held;
    this.held = undefined;
    return [...boundaries, ...this.machine.finish(last.silence, last.decibel)];
  }

  /** Every segment of the stream, `[start_ms, end_ms]`: FunASR's offline result once `finish` ran. */
  segments(): [number, number][] {
    return this.machine.segments();
  }

  /** Stacks every LFR frame whose frames exist (all, at the end), runs the model on them and feeds the state machine. */
  private async score(final: boolean): Promise<VadBoundary[]> {
    const { lfrM: m, lfrN: n, numMelBins: bins } = this.config.frontEnd;
    const left = Math.floor((m - 1) / 2);
    const total = this.fbankFrames;
    // funasr_onnx's apply_lfr: ceil(T / n) stacks; stack i reads padded frames i·n .. i·n + m − 1, i.e. frames i·n − left .. i·n + m − 1 − left.
    const ready = final ? Math.ceil(total / n) : Math.max(0, Math.floor((total - m + left) / n) + 1);
    const count = Math.min(ready, Math.ceil(total / n)) - this.stacked;
    if (count <= 0) return [];
    const dim = m * bins;
    const feats = new Float32Array(count * dim);
    for (let s = 0; s < count; s++) {
      const i = this.stacked + s;
      for (let j = 0; j < m; j++) {
        const source = Math.min(Math.max(i * n + j - left, 0), total - 1);
        feats.set(this.kept[source - this.keptAt], (s * m + j) * bins);
      }
    }
    applyCmvn(feats, this.config.cmvn);
    const inputs: Record<string, Tensor> = { speech: createTensor('speech', 'FP32', [1, count, dim], feats) };
    this.caches.forEach((c, i) => (inputs[`in_cache${i}`] = c));
    const outputs = ['logits', ...this.caches.map((_, i) => `out_cache${i}`)];
    const produced = await this.session.run(inputs, outputs);
    this.caches = this.caches.map((c, i) => createTensor(`in_cache${i}`, 'FP32', c.shape, produced[`out_cache${i}`].data as Float32Array));
    const logits = produced.logits;
    const classes = logits.shape[2];
    const scores = logits.data as Float32Array;
    const boundaries: VadBoundary[] = [];
    for (let s = 0; s < count; s++) {
      const frame = this.stacked + s;
      let silence = 0;
      for (const id of this.config.vad.silPdfIds) silence += scores[s * classes + id];
      // FunASR's decibels are per 10 ms fbank frame; with lfr_n 1 (FSMN-VAD's), one per score frame.
      const db = this.decibels[Math.min(frame * n, total - 1) - this.keptAt];
      if (this.held) boundaries.push(...this.machine.frame(this.held.silence, this.held.decibel));
      this.held = { silence, decibel: db };
    }
    this.stacked += count;
    this.dropKept();
    return boundaries;
  }

  /** Keeps only the frames the next stacks still read. */
  private dropKept(): void {
    const { lfrM: m, lfrN: n } = this.config.frontEnd;
    const firstNeeded = Math.max(0, this.stacked * n - Math.floor((m - 1) / 2));
    const drop = Math.min(firstNeeded, this.fbankFrames - 1) - this.keptAt;
    if (drop <= 0) return;
    this.kept = this.kept.slice(drop);
    this.decibels = this.decibels.slice(drop);
    this.keptAt += drop;
  }
}

/** FunASR's ComputeDecibel for one frame: 10·log10(Σx² + 1e-6) over its samples in [-1, 1]. */
function decibel(samples: Float32Array, from: number, length: number): number {
  let sum = 0;
  for (let i = from; i < from + length; i++) sum += samples[i] * samples[i];
  return 10 * Math.log10(sum + 0.000001);
}
