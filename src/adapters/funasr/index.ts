export { FunAsrMessage, FUNASR_MODES, type FunAsrMode, type FunAsrReply, type FunAsrReplyMode, type ChunkSizeInput } from './funasr-message.js';
export { FUNASR_SAMPLE_RATE, type FunAsrRecognizer, type RecognizeOptions, type RecognitionResult, type RecognitionPass, type Hotword } from './funasr-recognizer.js';
export { funAsrSession, type FunAsrSessionOptions } from './funasr-session.js';
export type { StreamingVad, VadEvent } from './streaming-vad.js';
export { SileroVadSegmenter, SILERO_WINDOW_SAMPLES, DEFAULT_VAD_SEGMENTER_OPTIONS, type VadSegmenterOptions } from './silero-vad-segmenter.js';
