export { Qwen3Decoder, MODEL_FOLDER } from './qwen3-decoder.js';
