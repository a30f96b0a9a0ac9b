import { Batch, createError, Endpoint, Model, type ModelContext } from 'serve-fn';
import { loadCharset } from './ctc-decoder.js';
import { OCR_MODEL_FILES, OCR_SESSION_OPTIONS } from './ocr-model-files.js';
import { RecognizedLine, TextLineCrop } from './ocr-dtos.js';
import { TextRecognizer } from './text-recognizer.js';

/**
 * The pipeline's second stage: text-line crops in, text out. Batched, so the crops of every
 * request in flight (each `ocr` instance sends its lines one ctx.infer call each) share runs.
 */
@Model({ name: 'ocr-rec', description: 'PaddleOCR PP-OCRv4 text-line recognition' })
export class OcrRecognizer {
  private recognizer?: TextRecognizer;

  async initialize(ctx: ModelContext): Promise<void> {
    const session = await ctx.loadModel(OCR_MODEL_FILES.rec, { options: OCR_SESSION_OPTIONS });
    this.recognizer = new TextRecognizer(session, loadCharset(OCR_MODEL_FILES.keys));
  }

  @Endpoint('/ocr/recognize', {
    body: TextLineCrop,
    consumes: 'multipart',
    response: RecognizedLine,
    summary: 'Read one text-line crop (raw RGB bytes)',
    description: 'The second stage of /ocr, reachable on its own: send `pixels` as a file of width x height x 3 RGB bytes.',
  })
  @Batch(16, 5000)
  async recognize(batch: TextLineCrop[]): Promise<(RecognizedLine | Error)[]> {
    const sizeErrors = batch.map((c) => {
      const expected = c.width * c.height * 3;
      const got = c.pixels.data.byteLength;
      return got === expected ? undefined : createError('SF_ERR_BAD_REQUEST', `pixels holds ${got} bytes; a ${c.width} x ${c.height} RGB crop has ${expected}.`);
    });
    const valid = batch.filter((_, i) => !sizeErrors[i]);
    const texts = await this.recognizer!.recognize(valid.map((c) => ({ width: c.width, height: c.height, pixels: c.pixels.data })));
    let next = 0;
    return sizeErrors.map((error) => error ?? texts[next++]);
  }
}
