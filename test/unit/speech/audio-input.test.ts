import wavefile from 'wavefile';
import { describe, expect, it } from 'vitest';
import { decodeAudioFile, decodePcm16, toSpeechRate } from '../../../src/speech/audio-input.js';
import { thrown } from '../../helpers/thrown.js';

function wavBytes(channels: number, rate: number, depth: string, samples: number[] | number[][]): Uint8Array {
  const wav = new wavefile.WaveFile();
  wav.fromScratch(channels, rate, depth, samples);
  return wav.toBuffer();
}

function tone(rate: number, hz: number, seconds: number): number[] {
  return Array.from({ length: Math.round(rate * seconds) }, (_, i) => Math.round(12000 * Math.sin((2 * Math.PI * hz * i) / rate)));
}

describe('decodeAudioFile', () => {
  it('scales 16-bit PCM by 1/32768 both ways, as torchaudio does', () => {
    const audio = decodeAudioFile(wavBytes(1, 16000, '16', [32767, -32768, 16384, 0]));
    expect(Array.from(audio.samples)).toEqual([32767 / 32768, -1, 0.5, 0]);
    expect(audio.seconds).toBeCloseTo(4 / 16000);
  });

  it('averages stereo channels into mono', () => {
    const audio = decodeAudioFile(wavBytes(2, 16000, '16', [[16384, 0], [0, -16384]]));
    expect(Array.from(audio.samples)).toEqual([0.25, -0.25]);
  });

  it('resamples a 44.1 kHz tone to 16 kHz over the whole file, keeping its frequency and level', () => {
    const audio = decodeAudioFile(wavBytes(1, 44100, '16', tone(44100, 440, 1)));
    expect(audio.sourceRate).toBe(44100);
    expect(audio.samples.length).toBeGreaterThanOrEqual(15990);
    expect(audio.samples.length).toBeLessThanOrEqual(16010);
    const direct = tone(16000, 440, 1).map((v) => v / 32768);
    let err = 0;
    for (let i = 200; i < 15800; i++) err = Math.max(err, Math.abs(audio.samples[i] - direct[i]));
    expect(err).toBeLessThan(0.002);
  });

  it.each([
    ['empty', new Uint8Array(0), /empty/],
    ['not audio', new TextEncoder().encode('{"hello": "this is JSON, not a WAV file"}'), /not a WAV file/],
    ['a truncated header', new TextEncoder().encode('RIFF\u0000\u0000\u0000\u0000WAVEfmt '), /could not be read|no channels/],
  ])('refuses %s with a 400', (_, bytes, reason) => {
    const err = thrown(() => decodeAudioFile(bytes));
    expect(err).toMatchObject({ code: 'SF_ERR_AUDIO_INVALID', statusCode: 400 });
    expect((err as Error).message).toMatch(reason);
  });

  it('refuses a WAV header with 0 channels', () => {
    const bytes = wavBytes(1, 16000, '16', [1, 2, 3, 4]);
    new DataView(bytes.buffer, bytes.byteOffset).setUint16(22, 0, true);
    expect(thrown(() => decodeAudioFile(bytes))).toMatchObject({ code: 'SF_ERR_AUDIO_INVALID', statusCode: 400 });
  });

  it('refuses 192 kHz audio, naming the rates taken', () => {
    const err = thrown(() => decodeAudioFile(wavBytes(1, 192000, '16', [0, 0, 0, 0])));
    expect(err).toMatchObject({ code: 'SF_ERR_AUDIO_INVALID', statusCode: 400 });
    expect((err as Error).message).toMatch(/192000 Hz is outside 8000–48000 Hz/);
  });

  it('refuses audio over the length limit with a 413 before decoding it', () => {
    const err = thrown(() => decodeAudioFile(wavBytes(1, 8000, '16', new Array(8000 * 3).fill(0)), { maxSeconds: 2, maxSampleRate: 48000, minSampleRate: 8000 }));
    expect(err).toMatchObject({ code: 'SF_ERR_AUDIO_TOO_LONG', statusCode: 413 });
  });
});

describe('decodePcm16 and toSpeechRate', () => {
  it('reads little-endian 16-bit PCM', () => {
    const audio = decodePcm16(new Uint8Array([0x00, 0x40, 0x00, 0xc0, 0xff]), 16000);
    expect(Array.from(audio.samples)).toEqual([0.5, -0.5]);
  });

  it('refuses an hour of audio under the default 600 s limit', () => {
    expect(thrown(() => toSpeechRate(new Float32Array(16000 * 3600), 16000))).toMatchObject({ code: 'SF_ERR_AUDIO_TOO_LONG' });
  });
});
