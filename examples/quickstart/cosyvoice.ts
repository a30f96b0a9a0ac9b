import { IsIn, IsOptional, IsString, MaxLength, MinLength, IsNumber, Min, Max } from 'class-validator';
import wavefile from 'wavefile';
import { Batch, createError, Endpoint, Instances, Model } from 'serve-fn';
import { VOICE_IDS, VoiceBank } from './voice-bank.js';

const SAMPLE_RATE = 16_000;

export class SftRequest {
  @IsString() @MinLength(1) @MaxLength(2000) tts_text!: string;
  @IsString() @IsIn(VOICE_IDS) spk_id!: string;
}

export class ProsodyRequest {
  @IsString() @MinLength(1) @MaxLength(2000) text!: string;
  @IsOptional() @IsNumber() @Min(0.25) @Max(4) speed?: number;
}

export class ProsodyResponse {
  @IsNumber() duration_ms!: number;
  @IsNumber() syllables!: number;
  @IsNumber() words!: number;
  @IsNumber() batch_size!: number;
}

/**
 * A CosyVoice-shaped model that really computes, cheaply: `/inference_sft` renders the text as a
 * tone sequence (one pitched note per letter, silence for spaces) in the chosen voice and returns
 * a WAV file; `/prosody` estimates syllables and spoken duration, batched.
 */
@Instances(2)
@Model({ name: 'cosyvoice', version: '1', description: 'text to speech (tone synthesis demo)' })
export class CosyVoice {
  private noteMs = 60;

  constructor(private readonly voices: VoiceBank) {}

  async initialize(): Promise<void> {
    this.noteMs = Number(process.env.QUICKSTART_NOTE_MS ?? 60);
  }

  @Endpoint('/inference_sft', { body: SftRequest, consumes: 'multipart', produces: 'audio/wav', summary: 'Synthesize speech for a preset speaker (form fields, like CosyVoice)' })
  async inferenceSft(request: SftRequest): Promise<Buffer> {
    const voice = this.voices.get(request.spk_id);
    if (!voice) throw createError('SF_ERR_BAD_REQUEST', `unknown speaker '${request.spk_id}'`);
    const samplesPerNote = Math.round((SAMPLE_RATE * this.noteMs) / 1000);
    const pcm = new Int16Array(samplesPerNote * request.tts_text.length);
    [...request.tts_text].forEach((ch, i) => {
      if (/\s/.test(ch)) return;
      const hz = voice.pitchHz * 2 ** ((ch.codePointAt(0)! % 12) / 12);
      for (let s = 0; s < samplesPerNote; s++) {
        const fade = Math.min(1, s / 80, (samplesPerNote - s) / 80);
        pcm[i * samplesPerNote + s] = Math.round(12_000 * fade * Math.sin((2 * Math.PI * hz * s) / SAMPLE_RATE));
      }
    });
    const wav = new wavefile.WaveFile();
    wav.fromScratch(1, SAMPLE_RATE, '16', pcm);
    return Buffer.from(wav.toBuffer());
  }

  @Endpoint('/prosody', { body: ProsodyRequest, response: ProsodyResponse, summary: 'Estimate syllables and spoken duration' })
  @Batch(16, 1000)
  async prosody(batch: ProsodyRequest[]): Promise<ProsodyResponse[]> {
    return batch.map((r) => {
      const words = r.text.split(/\s+/).filter(Boolean);
      const syllables = words.reduce((n, w) => n + Math.max(1, (w.toLowerCase().match(/[aeiouy]+/g) ?? []).length), 0);
      const duration_ms = Math.round((syllables * 200) / (r.speed ?? 1));
      return { duration_ms, syllables, words: words.length, batch_size: batch.length };
    });
  }
}
