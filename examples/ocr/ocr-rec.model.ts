import { Batch, createError, createTensor, Endpoint, Model, Tensors, type ExecuteRequest, type ExecuteResponse, type ModelContext } from 'serve-fn';
import { loadCharset } from './ctc-decoder.js';
import { REC_HEIGHT } from './line-crop.js';
import { OCR_MODEL_FILES, OCR_SESSION_OPTIONS } from './ocr-model-files.js';
import { RecognizedLine, TextLineCrop } from './ocr-dtos.js';
import { MAX_RUN, TextRecognizer } from './text-recognizer.js';

/**
 * The pipeline's second stage: text-line crops in, text out. Batched, so the crops of every
 * request in flight (each `ocr` instance sends its lines one ctx.infer call each) share runs.
 * Its tensor interface takes crops already prepared as PaddleOCR's recogniser input `x` (BGR,
 * normalised to [-1, 1], 48 px high, NCHW) and answers each row's text and score, so a Triton
 * client or an ensemble that prepares crops itself reaches the same instances.
 */
@Model({ name: 'ocr-rec', description: 'PaddleOCR PP-OCRv4 text-line recognition' })
@Tensors({
  // Any width of 1 pixel or more runs; an empty crop (width 0) or batch is refused with 400, as no input allows empty.
  inputs: [{ name: 'x', datatype: 'FP32', dims: [3, REC_HEIGHT, -1] }],
  outputs: [
    { name: 'TEXT', datatype: 'BYTES', dims: [1] },
    { name: 'SCORE', datatype: 'FP32', dims: [1] },
  ],
  // Rows of one execution share a width, so they run as one batch: MAX_RUN says how many pay off.
  maxBatchSize: MAX_RUN,
})
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

  /** One execution holds requests of one shape (serve-fn splits by shape), so their rows run in one call. */
  @Batch(16, 5000)
  async execute(requests: ExecuteRequest[]): Promise<ExecuteResponse[]> {
    const inputs = requests.map((request) => request.input('x')!);
    const rows = inputs.map((x) => x.shape[0]);
    const data = new Float32Array(inputs.reduce((n, x) => n + x.data.length, 0));
    let offset = 0;
    for (const x of inputs) {
      data.set(x.data as Float32Array, offset);
      offset += x.data.length;
    }
    const total = rows.reduce((sum, n) => sum + n, 0);
    const texts = await this.recognizer!.recognizeTensor(createTensor('x', 'FP32', [total, ...inputs[0].shape.slice(1)], data));
    let next = 0;
    return rows.map((n) => {
      const mine = texts.slice(next, (next += n));
      return {
        outputs: [
          createTensor('TEXT', 'BYTES', [n, 1], mine.map((t) => Buffer.from(t.text))),
          createTensor('SCORE', 'FP32', [n, 1], Float32Array.from(mine, (t) => t.score)),
        ],
      };
    });
  }
}
