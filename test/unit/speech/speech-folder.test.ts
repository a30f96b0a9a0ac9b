import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { findSpeechFolders } from '../../../src/cli/entry-discovery.js';
import { isSpeechFolder, readSpeechFolder } from '../../../src/speech/speech-folder.js';
import { amMvnText } from '../../helpers/speech-python.js';
import { thrown } from '../../helpers/thrown.js';

function folder(files: Record<string, string>): string {
  const dir = mkdtempSync(join(tmpdir(), 'speech-folder-'));
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}

const MVN = amMvnText(new Float32Array(560).fill(-1), new Float32Array(560).fill(0.5));

describe('speech folders', () => {
  it("takes the kind from config.yaml's model:, not from the folder's name", () => {
    const dir = folder({ 'config.yaml': 'model: SenseVoiceSmall\nfrontend_conf:\n  lfr_m: 7\n  lfr_n: 6\n', 'model.onnx': '', 'am.mvn': MVN, 'tokens.json': '["<blank>", "a"]' });
    expect(isSpeechFolder(dir)).toBe(true);
    expect(readSpeechFolder(dir)).toMatchObject({ kind: 'SenseVoiceSmall', modelFile: join(dir, 'model.onnx'), tokens: ['<blank>', 'a'], frontEnd: { numMelBins: 80, lfrM: 7, lfrN: 6 } });
  });

  it('serves model_quant.onnx with quantize, and says how to export a missing one', () => {
    const dir = folder({ 'config.yaml': 'model: Paraformer\nmodel_conf:\n  predictor_bias: 1\n', 'model.onnx': '', 'am.mvn': MVN, 'tokens.json': '[]' });
    expect(readSpeechFolder(dir).predictorBias).toBe(1);
    const err = thrown(() => readSpeechFolder(dir, { quantize: true }));
    expect(err).toMatchObject({ code: 'SF_ERR_SPEECH_FOLDER_INVALID' });
    expect(err.message).toMatch(/has no model_quant\.onnx \(export it with .*quantize=True/);
  });

  it('serves model.om when it is the only model file or with device npu; beside model.onnx the ONNX file stays the default', () => {
    const files = { 'config.yaml': 'model: SenseVoiceSmall\n', 'am.mvn': MVN, 'tokens.json': '["<blank>"]' };
    const omOnly = folder({ ...files, 'model.om': '' });
    expect(readSpeechFolder(omOnly)).toMatchObject({ modelFile: join(omOnly, 'model.om'), device: 'npu' });
    const both = folder({ ...files, 'model.om': '', 'model.onnx': '' });
    expect(readSpeechFolder(both)).toMatchObject({ modelFile: join(both, 'model.onnx'), device: 'cpu' });
    expect(readSpeechFolder(both, { device: 'npu' })).toMatchObject({ modelFile: join(both, 'model.om'), device: 'npu' });
    expect(thrown(() => readSpeechFolder(omOnly, { device: 'cpu' })).message).toMatch(/has no model\.onnx/);
  });

  it('refuses device npu for a folder without model.om, saying how to make one', () => {
    const dir = folder({ 'config.yaml': 'model: Paraformer\n', 'model.onnx': '', 'am.mvn': MVN, 'tokens.json': '[]' });
    const err = thrown(() => readSpeechFolder(dir, { device: 'npu' }));
    expect(err).toMatchObject({ code: 'SF_ERR_SPEECH_FOLDER_INVALID' });
    expect(err.message).toMatch(/has no model\.om \(--device npu serves a model\.om: compile model\.onnx with ATC or `serve-fn convert`/);
  });

  it.each([
    ['no am.mvn or tokens.json', { 'config.yaml': 'model: SenseVoiceSmall\n', 'model.onnx': '' }, /has no am\.mvn, tokens\.json.*tokens\.json; a SentencePiece/],
    ['an unknown model', { 'config.yaml': 'model: Whisper\n' }, /model 'Whisper' is not a FunASR model/],
    ['a VAD export, which transcribes nothing itself', { 'config.yaml': 'model: FsmnVADStreaming\n' }, /it is a FsmnVADStreaming export; serve-fn transcribes with SenseVoiceSmall, Paraformer, BiCifParaformer and streaming Paraformer \(ParaformerStreaming\) folders so far \(a VAD or punctuation folder is read by speech-chain-folders.ts and served beside an ASR folder\)/],
    ['am.mvn of the wrong width', { 'config.yaml': 'model: Paraformer\nfrontend_conf:\n  lfr_m: 5\n', 'model.onnx': '', 'am.mvn': MVN, 'tokens.json': '[]' }, /560 values per frame, where frontend_conf's n_mels × lfr_m is 400/],
    ['tokens.json that is not a list of pieces', { 'config.yaml': 'model: Paraformer\n', 'model.onnx': '', 'am.mvn': MVN, 'tokens.json': '{"a": 1}' }, /not a JSON array of strings/],
  ])('refuses a folder with %s, saying what is wrong', (_, files, message) => {
    const err = thrown(() => readSpeechFolder(folder(files)));
    expect(err).toMatchObject({ code: 'SF_ERR_SPEECH_FOLDER_INVALID' });
    expect(err.message).toMatch(message);
  });

  it('finds the speech folders inside a folder of folders, as FunASR\'s 2pass server is given them', () => {
    const parent = mkdtempSync(join(tmpdir(), 'speech-parent-'));
    for (const name of ['asr', 'other']) mkdirSync(join(parent, name));
    writeFileSync(join(parent, 'asr', 'config.yaml'), 'model: Paraformer\n');
    writeFileSync(join(parent, 'other', 'config.yaml'), 'not: a model\n');
    expect(findSpeechFolders(parent)).toEqual([join(parent, 'asr')]);
    expect(findSpeechFolders(join(parent, 'other'))).toBeUndefined();
  });
});
