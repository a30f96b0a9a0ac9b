import { IsBoolean, IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, ValidateBy } from 'class-validator';
import type { StampSentenceReply } from './funasr-recognizer.js';

export const FUNASR_MODES = ['offline', 'online', '2pass'] as const;
export type FunAsrMode = (typeof FUNASR_MODES)[number];

/** `[5, 10, 5]` or FunASR's string form `"5,10,5"`: look-back, chunk and look-ahead, in 60 ms units. */
export type ChunkSizeInput = readonly number[] | string;

const CHUNK_SIZE_TEXT = /^\s*\d+\s*,\s*\d+\s*,\s*\d+\s*$/;

function isChunkSize(value: unknown): boolean {
  if (typeof value === 'string') return CHUNK_SIZE_TEXT.test(value) && Number(value.split(',')[1]) > 0;
  return Array.isArray(value) && value.length === 3 && value.every((n) => Number.isInteger(n) && n >= 0) && value[1] > 0;
}

/**
 * A text frame of FunASR's WebSocket protocol (runtime/docs/websocket_protocol.md). Every field is
 * optional: the first frame configures the utterance, and `{"is_speaking": false}` ends it.
 * svs_lang and svs_itn (FunASR's C++ server's SenseVoice options) reach the recognizer.
 */
export class FunAsrMessage {
  @IsOptional()
  @IsIn([...FUNASR_MODES], { message: "mode must be 'offline', 'online' or '2pass'" })
  mode?: FunAsrMode;

  @IsOptional()
  @ValidateBy({
    name: 'isChunkSize',
    validator: { validate: isChunkSize, defaultMessage: () => 'chunk_size must be three non-negative integers with a positive middle one, e.g. [5, 10, 5] or "5,10,5"' },
  })
  chunk_size?: ChunkSizeInput;

  @IsOptional()
  @IsInt()
  @Min(1)
  @Max(1000)
  chunk_interval?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  encoder_chunk_look_back?: number;

  @IsOptional()
  @IsInt()
  @Min(0)
  decoder_chunk_look_back?: number;

  @IsOptional()
  @IsString()
  @MaxLength(256)
  wav_name?: string;

  @IsOptional()
  @IsString()
  @MaxLength(32)
  wav_format?: string;

  @IsOptional()
  @IsInt()
  @Min(1)
  audio_fs?: number;

  @IsOptional()
  @IsBoolean()
  is_speaking?: boolean;

  /** Sent by newer FunASR clients with the end frame; the final reply then carries `is_end: true`. */
  @IsOptional()
  @IsBoolean()
  is_end?: boolean;

  /** A JSON object string of weighted words (`{"serve-fn": 20}`) or plain words separated by spaces. */
  @IsOptional()
  @IsString()
  @MaxLength(10_000)
  hotwords?: string;

  @IsOptional()
  @IsBoolean()
  itn?: boolean;

  @IsOptional()
  @IsString()
  svs_lang?: string;

  @IsOptional()
  @IsBoolean()
  svs_itn?: boolean;
}

export type FunAsrReplyMode = 'offline' | 'online' | '2pass-online' | '2pass-offline';

/** A result frame, as FunASR's servers send it. */
export interface FunAsrReply {
  readonly mode: FunAsrReplyMode;
  readonly text: string;
  readonly wav_name: string;
  /** True on the last reply of an utterance, the one answering `{"is_speaking": false}`. */
  readonly is_final: boolean;
  /** Token times in ms from the start of the utterance, as a JSON string: `"[[100,200],[200,500]]"`. */
  readonly timestamp?: string;
  /** Punctuated sentences with their times in ms from the start of the utterance, where the model gives token times. */
  readonly stamp_sents?: readonly StampSentenceReply[];
  readonly is_end?: true;
}
