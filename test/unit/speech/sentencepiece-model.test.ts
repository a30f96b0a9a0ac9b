import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { sentencePiecePieces } from '../../../src/speech/sentencepiece-model.js';
import { readSpeechFolder } from '../../../src/speech/speech-folder.js';
import { amMvnText } from '../../helpers/speech-python.js';
import { thrown } from '../../helpers/thrown.js';

/**
 * A SentencePiece ModelProto written byte by byte from sentencepiece_model.proto's wire format:
 * field 1 (pieces), each a message of piece (1, string), score (2, float) and type (3, varint),
 * then a trainer_spec (field 2) that a reader of pieces skips.
 */
function modelProto(pieces: readonly string[]): Uint8Array {
  const out: number[] = [];
  pieces.forEach((piece, id) => {
    const text = [...new TextEncoder().encode(piece)];
    const score = [...new Uint8Array(Float32Array.of(-id).buffer)];
    const inner = [0x0a, text.length, ...text, 0x15, ...score, 0x18, id < 2 ? 2 : 1];
    out.push(0x0a, inner.length, ...inner);
  });
  out.push(0x12, 0x02, 0x08, 0x01);
  return Uint8Array.from(out);
}

const PIECES = ['<unk>', '<s>', '</s>', '<|zh|>', '▁the', '▁quick', 's', '你好'];

describe('SentencePiece model files', () => {
  it('reads the pieces in id order', () => {
    expect(sentencePiecePieces(modelProto(PIECES))).toEqual(PIECES);
  });

  it('refuses a file that holds no pieces', () => {
    expect(() => sentencePiecePieces(new TextEncoder().encode('not a model'))).toThrow();
  });

  it("serves a SenseVoice export that ships only its .bpe.model, as funasr_onnx reads it", () => {
    const dir = mkdtempSync(join(tmpdir(), 'sensevoice-bpe-'));
    writeFileSync(join(dir, 'config.yaml'), 'model: SenseVoiceSmall\n');
    writeFileSync(join(dir, 'model.onnx'), '');
    writeFileSync(join(dir, 'am.mvn'), amMvnText(new Float32Array(560), new Float32Array(560).fill(1)));
    writeFileSync(join(dir, 'chn_jpn_yue_eng_ko_spectok.bpe.model'), modelProto(PIECES));
    expect(readSpeechFolder(dir).tokens).toEqual(PIECES);
    writeFileSync(join(dir, 'chn_jpn_yue_eng_ko_spectok.bpe.model'), 'broken');
    const err = thrown(() => readSpeechFolder(dir));
    expect(err).toMatchObject({ code: 'SF_ERR_SPEECH_FOLDER_INVALID' });
    expect(err.message).toMatch(/chn_jpn_yue_eng_ko_spectok\.bpe\.model could not be read/);
  });
});
