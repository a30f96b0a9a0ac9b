import { describe, expect, it } from 'vitest';
import { FunAsrMessage } from '../../src/adapters/funasr/funasr-message.js';
import { RequestValidationError, validateDto } from '../../src/validation/dto-validator.js';

async function issues(plain: object): Promise<string[]> {
  try {
    await validateDto(FunAsrMessage, plain, 'body');
    return [];
  } catch (err) {
    expect(err).toBeInstanceOf(RequestValidationError);
    return (err as RequestValidationError).detail.map((d) => `${d.loc.join('.')}: ${d.msg}`);
  }
}

describe('FunAsrMessage', () => {
  it("accepts the configuration frames of FunASR's clients and the end frame", async () => {
    const config = {
      mode: '2pass', chunk_size: [5, 10, 5], chunk_interval: 10, encoder_chunk_look_back: 4, decoder_chunk_look_back: 0, audio_fs: 16000,
      wav_name: 'demo', wav_format: 'pcm', is_speaking: true, hotwords: '{"阿里巴巴":20}', itn: true, svs_lang: 'auto', svs_itn: true,
    };
    expect(await issues(config)).toEqual([]);
    expect(await issues({ ...config, chunk_size: '5,10,5' })).toEqual([]);
    expect(await issues({ is_speaking: false, is_end: true })).toEqual([]);
    const message = await validateDto<FunAsrMessage>(FunAsrMessage, { mode: 'online', chunk_size: '0,8,4' }, 'body');
    expect(message).toBeInstanceOf(FunAsrMessage);
    expect({ ...message }).toEqual({ mode: 'online', chunk_size: '0,8,4' });
  });

  it('rejects an unknown mode, a chunk_size without a chunk, and wrongly typed fields', async () => {
    expect(await issues({ mode: 'realtime' })).toEqual(["body.mode: mode must be 'offline', 'online' or '2pass'"]);
    const chunkMessage = 'chunk_size must be three non-negative integers with a positive middle one, e.g. [5, 10, 5] or "5,10,5"';
    for (const chunk_size of [[5, 0, 5], [5, 10], '5,x,5', [5, 1.5, 5]]) expect(await issues({ chunk_size })).toEqual([`body.chunk_size: ${chunkMessage}`]);
    expect(await issues({ is_speaking: 'no', audio_fs: 16000.5 })).toEqual(['body.audio_fs: audio_fs must be an integer number', 'body.is_speaking: is_speaking must be a boolean value']);
  });
});
