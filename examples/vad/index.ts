export { SpeechDetector } from './vad.model.js';
