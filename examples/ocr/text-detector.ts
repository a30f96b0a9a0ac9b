import { boxesFromProbabilityMap, DEFAULT_DB_OPTIONS, type DbOptions, type TextBox } from './db-postprocess.js';
import { DET_LIMIT_SIDE, prepareDetInput } from './det-preprocess.js';
import type { RgbImage } from './image-decoder.js';
import type { BackendSession } from 'serve-fn';

/** PP-OCRv4 text detection: an image in, text boxes (in the image's pixels) out. */
export class TextDetector {
  constructor(
    private readonly session: BackendSession,
    private readonly options: DbOptions = DEFAULT_DB_OPTIONS,
    private readonly limitSide = DET_LIMIT_SIDE,
  ) {}

  async detect(image: RgbImage): Promise<TextBox[]> {
    const input = await prepareDetInput(image, this.limitSide);
    const outputs = await this.session.run({ x: input.tensor });
    const map = Object.values(outputs)[0];
    const data = map.data as Float32Array;
    return boxesFromProbabilityMap({ data, width: input.mapWidth, height: input.mapHeight }, image.width, image.height, this.options);
  }
}
