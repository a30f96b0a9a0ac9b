export { StreamingAsr } from './streaming-asr.model.js';
