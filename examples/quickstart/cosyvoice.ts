import { IsIn, IsOptional, IsString, MaxLength, MinLength, IsNumber, Min, Max } from 'class-validator';
import wavefile from 'wavefile';
import { Batch, createError, createTensor, Endpoint, Instances, Model, Tensors, type ExecuteRequest, type ExecuteResponse } from 'serve-fn';
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
 * a WAV file; `/prosody` estimates syllables and spoken duration, batched. The same estimate is its
 * KServe v2 tensor interface (`POST /v2/models/cosyvoice/infer`, gRPC ModelInfer, tritonclient):
 * a TEXT row in, its DURATION_MS, SYLLABLES and WORDS out.
 */
@Instances(2)
@Model({ name: 'cosyvoice', version: '1', description: 'text to speech (tone synthesis demo)' })
@Tensors({
  inputs: [
    { name: 'TEXT', datatype: 'BYTES', dims: [1] },
    { name: 'SPEED', datatype: 'FP32', dims: [1], optional: true },
  ],
  outputs: [
    { name: 'DURATION_MS', datatype: 'INT32', dims: [1] },
    { name: 'SYLLABLES', datatype: 'INT32', dims: [1] },
    { name: 'WORDS', datatype: 'INT32', dims: [1] },
  ],
})
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
    return batch.map((r) => ({ ...estimateProsody(r.text, r.speed), batch_size: batch.length }));
  }

  /** Every row of every request, checked as /prosody's DTO checks its fields; a bad row fails its request with a 400. */
  @Batch(16, 1000)
  async execute(requests: ExecuteRequest[]): Promise<ExecuteResponse[]> {
    return requests.map((request) => {
      const texts = (request.input('TEXT')!.data as Uint8Array[]).map((t) => Buffer.from(t).toString('utf8'));
      const speeds = request.input('SPEED')?.data as Float32Array | undefined;
      const bad = texts.findIndex((t, i) => t.length < 1 || t.length > 2000 || (speeds !== undefined && !(speeds[i] >= 0.25 && speeds[i] <= 4)));
      if (bad >= 0) return { error: createError('SF_ERR_BAD_REQUEST', `row ${bad}: TEXT must hold 1 to 2000 characters and SPEED lie in [0.25, 4]`) };
      const estimates = texts.map((text, i) => estimateProsody(text, speeds?.[i]));
      const column = (name: string, pick: (e: Prosody) => number) => createTensor(name, 'INT32', [texts.length, 1], Int32Array.from(estimates, pick));
      return { outputs: [column('DURATION_MS', (e) => e.duration_ms), column('SYLLABLES', (e) => e.syllables), column('WORDS', (e) => e.words)] };
    });
  }
}

type Prosody = Omit<ProsodyResponse, 'batch_size'>;

function estimateProsody(text: string, speed = 1): Prosody {
  const words = text.split(/\s+/).filter(Boolean);
  const syllables = words.reduce((n, w) => n + Math.max(1, (w.toLowerCase().match(/[aeiouy]+/g) ?? []).length), 0);
  return { duration_ms: Math.round((syllables * 200) / speed), syllables, words: words.length };
}
