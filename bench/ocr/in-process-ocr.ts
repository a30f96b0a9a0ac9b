import { OnnxBackend } from '../../src/backends/onnx/onnx-backend.js';
import { loadCharset } from '../../examples/ocr/ctc-decoder.js';
import { decodeImage } from '../../examples/ocr/image-decoder.js';
import { cropLine } from '../../examples/ocr/line-crop.js';
import { OCR_MODEL_FILES } from '../../examples/ocr/ocr-model-files.js';
import { assembleOcrResult, type OcrResult } from '../../examples/ocr/ocr-result.js';
import { TextDetector } from '../../examples/ocr/text-detector.js';
import { TextRecognizer } from '../../examples/ocr/text-recognizer.js';

/**
 * The OCR example's det -> crop -> rec pipeline without a server: the same pre- and
 * post-processing and the same ONNX Runtime backend, on this thread. Each image's lines are
 * recognised in one call, the batching a hand-written loop would do.
 */
export class InProcessOcr {
  private constructor(
    private readonly detector: TextDetector,
    private readonly recognizer: TextRecognizer,
  ) {}

  static async create(sessionOptions: Readonly<Record<string, unknown>>): Promise<InProcessOcr> {
    const backend = new OnnxBackend();
    const det = await backend.load(OCR_MODEL_FILES.det, { options: sessionOptions });
    const rec = await backend.load(OCR_MODEL_FILES.rec, { options: sessionOptions });
    return new InProcessOcr(new TextDetector(det), new TextRecognizer(rec, loadCharset(OCR_MODEL_FILES.keys)));
  }

  async read(bytes: Uint8Array): Promise<OcrResult> {
    const image = await decodeImage(bytes);
    const boxes = await this.detector.detect(image);
    const texts = await this.recognizer.recognize(boxes.map((b) => cropLine(image, b.quad)));
    return assembleOcrResult(image.width, image.height, boxes, texts);
  }
}
