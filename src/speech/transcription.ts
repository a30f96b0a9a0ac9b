import type { StampSentence } from './stamp-sentences.js';

/**
 * What a speech model answers for one utterance; plain data, since it crosses from the instance's
 * thread as the RESULT output's JSON.
 */
export interface Transcription {
  /** The words; with SenseVoice's ITN, punctuated as the model wrote them. */
  readonly text: string;
  /** FunASR's C++ runtime's result string: SenseVoice's tags before the words; the text for Paraformer. */
  readonly richText: string;
  /** Seconds of audio, at its own sample rate. */
  readonly duration: number;
  /** SenseVoice's decoded tags: language (`en`), emotion (`NEUTRAL`), event (`Speech`), ITN (`woitn`). */
  readonly language?: string;
  readonly emotion?: string;
  readonly event?: string;
  readonly itn?: string;
  /** BiCifParaformer: each word with its start and end in seconds. */
  readonly words?: readonly TimedWord[];
  /** BiCifParaformer: `[start_ms, end_ms]` per token, FunASR's `timestamp`. */
  readonly timestamp?: readonly (readonly [number, number])[];
  /** With a VAD model served: the VAD's segments, each with its text, in seconds (speech-chain.ts). */
  readonly segments?: readonly TimedSegment[];
  /** With a punctuation model and token times: FunASR's `stamp_sents` (stamp-sentences.ts). */
  readonly stampSents?: readonly StampSentence[];
}

export interface TimedSegment {
  readonly start: number;
  readonly end: number;
  readonly text: string;
}

export interface TimedWord {
  readonly word: string;
  readonly start: number;
  readonly end: number;
}

/** What the caller chooses per utterance: SenseVoice's language and text normalisation (FunASR's svs_lang, svs_itn). */
export interface TranscribeOptions {
  /** `auto`, `zh`, `en`, `yue`, `ja`, `ko`, `nospeech`. */
  readonly language?: string;
  readonly itn?: boolean;
}
