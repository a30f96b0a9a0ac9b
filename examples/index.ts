export { OcrDetector, OcrRecognizer } from './ocr/index.js';
export { CosyVoice } from './quickstart/index.js';
export { SpeechDetector } from './vad/index.js';
export { StreamingAsr } from './streaming-asr/index.js';
