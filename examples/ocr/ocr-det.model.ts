import { Endpoint, Instances, Model, type ModelContext } from 'serve-fn';
import type { RecognizedText } from './ctc-decoder.js';
import { decodeBase64Image, decodeImage } from './image-decoder.js';
import { cropLine, type LineCrop } from './line-crop.js';
import { OCR_MODEL_FILES, OCR_SESSION_OPTIONS } from './ocr-model-files.js';
import { OcrBase64Request, OcrResponse, OcrUpload, type TextLineCrop } from './ocr-dtos.js';
import { assembleOcrResult, type OcrResult } from './ocr-result.js';
import { TextDetector } from './text-detector.js';

/**
 * The OCR endpoints and the pipeline's first stage: decode, detect text boxes, cut each line out,
 * and read every line through `ocr-rec` with ctx.infer (Triton's BLS), where lines from concurrent
 * requests are batched together. Two instances: one detects while the other waits on recognition.
 */
@Model({ name: 'ocr', description: 'PaddleOCR PP-OCRv4 text detection and the OCR pipeline' })
@Instances(2)
export class OcrDetector {
  private detector?: TextDetector;
  private ctx?: ModelContext;

  async initialize(ctx: ModelContext): Promise<void> {
    this.ctx = ctx;
    this.detector = new TextDetector(await ctx.loadModel(OCR_MODEL_FILES.det, { options: OCR_SESSION_OPTIONS }));
  }

  @Endpoint('/ocr', { body: OcrUpload, consumes: 'multipart', response: OcrResponse, summary: 'Read the text in an uploaded image' })
  async readUpload(request: OcrUpload): Promise<OcrResult> {
    return this.read(request.image.data);
  }

  @Endpoint('/ocr/base64', { body: OcrBase64Request, response: OcrResponse, summary: 'Read the text in a base64 image' })
  async readBase64(request: OcrBase64Request): Promise<OcrResult> {
    return this.read(decodeBase64Image(request.image));
  }

  private async read(bytes: Uint8Array): Promise<OcrResult> {
    const image = await decodeImage(bytes);
    const boxes = await this.detector!.detect(image);
    const texts = await Promise.all(boxes.map((box) => this.recognize(cropLine(image, box.quad))));
    return assembleOcrResult(image.width, image.height, boxes, texts);
  }

  private recognize(crop: LineCrop): Promise<RecognizedText> {
    // The same shape as an upload to /ocr/recognize. The Buffer is a view over the crop's own
    // memory, so the crop is handed over to the other threads rather than copied.
    const input: TextLineCrop = {
      width: crop.width,
      height: crop.height,
      pixels: { filename: 'line.rgb', mimetype: 'application/octet-stream', encoding: 'binary', data: Buffer.from(crop.pixels.buffer) },
    };
    return this.ctx!.infer<RecognizedText>('ocr-rec', input);
  }
}
