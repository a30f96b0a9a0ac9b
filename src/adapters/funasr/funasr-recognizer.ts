/** The sample rate of the audio handed to recognizers and VADs (FunASR's default and Silero's). */
export const FUNASR_SAMPLE_RATE = 16_000;

/** A hotword from the config frame; `weight` only when the client sent FunASR's JSON form. */
export interface Hotword {
  readonly word: string;
  readonly weight?: number;
}

/**
 * `online`: a chunk of the open speech segment, for a streaming model (text is the new part only,
 * as FunASR's online replies are). `offline`: a whole VAD segment, once it has ended.
 */
export type RecognitionPass = 'online' | 'offline';

export interface RecognizeOptions {
  readonly pass: RecognitionPass;
  /**
   * The last call for this segment: always true offline; online, the chunk that ends the segment,
   * after which a streaming model should drop its state.
   */
  readonly final: boolean;
  /** Which VAD segment of the utterance the audio belongs to, from 0. */
  readonly segment: number;
  /** Where the audio starts in the utterance, in ms. */
  readonly startMs: number;
  readonly hotwords: readonly Hotword[];
  readonly itn: boolean;
  /** The client's `[look-back, chunk, look-ahead]`, in 60 ms units. */
  readonly chunkSize: readonly [number, number, number];
  readonly wavName: string;
  /** SenseVoice's language (`auto`, `zh`, `en`, ...) and text normalisation, from the config frame's svs_lang / svs_itn (FunASR's C++ server). */
  readonly svsLang?: string;
  readonly svsItn?: boolean;
}

export interface RecognitionResult {
  readonly text: string;
  /** Token times in ms from the start of the audio passed in; the adapter shifts them to the utterance. */
  readonly timestamp?: readonly (readonly [number, number])[];
  /** FunASR's `stamp_sents` (punctuated sentences with their times), in ms from the start of the audio passed in. */
  readonly stampSents?: readonly StampSentenceReply[];
}

/** One sentence of `stamp_sents`, as FunASR's C++ server writes it (runtime/onnxruntime/src/util.cpp TimestampSentence). */
export interface StampSentenceReply {
  readonly text_seg: string;
  readonly punc: string;
  readonly start: number;
  readonly end: number;
  readonly ts_list: readonly (readonly [number, number])[];
}

/**
 * The recognition step a model plugs into the FunASR adapter. One session calls it one call at a
 * time, in stream order; give each connection its own recognizer when it keeps streaming state.
 */
export interface FunAsrRecognizer {
  /** `audio`: mono samples in [-1, 1] at FUNASR_SAMPLE_RATE. */
  recognize(audio: Float32Array, options: RecognizeOptions): Promise<RecognitionResult>;
}
