export { OcrDetector } from './ocr-det.model.js';
export { OcrRecognizer } from './ocr-rec.model.js';
