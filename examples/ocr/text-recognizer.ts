import { ctcGreedyDecode, type RecognizedText } from './ctc-decoder.js';
import type { LineCrop } from './line-crop.js';
import type { BackendSession, Tensor } from 'serve-fn';
import { MIN_REC_WIDTH, prepareRecBatch, toRecHeight } from './rec-preprocess.js';

/** A crop joins a run of the recogniser only while it is at most this much wider than the run's narrowest. */
const WIDTH_SPREAD = 1.5;
/**
 * Crops per ONNX Runtime call. On one CPU thread the cost per crop is flat up to about 4 and rises
 * beyond (PP-OCRv4 rec, 576 px wide: 30-37 ms per crop in runs of 1-4, 37-48 ms in runs of 8), as
 * the activations outgrow the cache; PaddleOCR's own default is 6. A GPU wants larger runs.
 */
export const MAX_RUN = 4;

/** PP-OCRv4 text recognition: crops in, text and scores out, in the order given. */
export class TextRecognizer {
  constructor(
    private readonly session: BackendSession,
    private readonly charset: readonly string[],
  ) {}

  /**
   * Runs the crops in few calls: sorted by width, and split where one run would pad narrow crops
   * to far wider ones (the cost of a run is its count times its widest crop) or grow past MAX_RUN.
   */
  async recognize(crops: readonly LineCrop[]): Promise<RecognizedText[]> {
    const ready = crops.map(toRecHeight);
    const order = ready.map((_, i) => i).sort((a, b) => ready[a].width - ready[b].width);
    const results: RecognizedText[] = new Array(crops.length);
    let start = 0;
    while (start < order.length) {
      const limit = Math.max(MIN_REC_WIDTH, ready[order[start]].width) * WIDTH_SPREAD;
      let end = start + 1;
      while (end < order.length && end - start < MAX_RUN && ready[order[end]].width <= limit) end++;
      const run = order.slice(start, end);
      const texts = await this.run(run.map((i) => ready[i]));
      run.forEach((i, k) => (results[i] = texts[k]));
      start = end;
    }
    return results;
  }

  private run(crops: readonly LineCrop[]): Promise<RecognizedText[]> {
    return this.recognizeTensor(prepareRecBatch(crops));
  }

  /** Reads the text of every row of `x`, crops already prepared as prepareRecBatch packs them (N x 3 x 48 x W). */
  async recognizeTensor(x: Tensor): Promise<RecognizedText[]> {
    const outputs = await this.session.run({ x: { ...x, name: 'x' } });
    const probs = Object.values(outputs)[0];
    const [batch, steps] = probs.shape;
    return ctcGreedyDecode(probs.data as Float32Array, batch, steps, this.charset);
  }
}
