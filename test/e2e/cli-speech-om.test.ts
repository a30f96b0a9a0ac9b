import { existsSync, mkdirSync, mkdtempSync, readFileSync, renameSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadNpuBinding } from '../../src/backends/npu/native-binding.js';
import { ACL_LIBRARY_ENV } from '../../src/backends/npu/npu-library.js';
import { makeTinyFunAsrModels, missingPython, referenceTranscript, SPEECH_WAVS } from '../helpers/speech-python.js';
import { REAL_HARDWARE, setUpNpuTests } from '../native/npu-test-env.js';
import { omFolder } from '../native/speech-om-folder.js';
import { startCli } from './cli-harness.js';

const missing = 'reason' in loadNpuBinding() ? 'the NPU addon is not built (npm run build:native)' : REAL_HARDWARE ? 'the simulated .om is made by the simulation' : (missingPython(['onnx', 'numpy', 'torchaudio']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed'));

/** `serve-fn start` on a FunASR folder holding only model.om, on the simulated AscendCL: no flag needed. */
describe.skipIf(missing)(`serve-fn start <FunASR folder with model.om>${missing ? ` (skipped: ${missing})` : ''}`, () => {
  it('serves the model.om through npu_om when it is the folder\'s only model file, with the OM\'s compiled length', async () => {
    const env = setUpNpuTests();
    const made = mkdtempSync(join(tmpdir(), 'cli-speech-om-'));
    const models = makeTinyFunAsrModels(made);
    const root = join(made, 'served');
    mkdirSync(root);
    omFolder(models.senseVoice, join(made, 'SenseVoiceSmall-om'));
    renameSync(join(made, 'SenseVoiceSmall-om'), join(root, 'SenseVoiceSmall-om'));
    // The child finds the simulated AscendCL as production finds the real one; SIM_ORT_LIBRARY (set by the build) goes with process.env.
    const cli = await startCli(['start', root, '--host', '127.0.0.1'], { [ACL_LIBRARY_ENV]: env.libraryPath! });
    try {
      await cli.waitForOutput(/"grpcPort":(\d+)/, 90_000);
      const transcribe = async (wav: string) => {
        const form = new FormData();
        form.append('file', new Blob([readFileSync(wav)]), 'a.wav');
        form.append('model', 'SenseVoiceSmall-om');
        const res = await fetch(`${cli.base}/v1/audio/transcriptions`, { method: 'POST', body: form });
        return { status: res.status, json: (await res.json()) as any };
      };
      const ok = await transcribe(SPEECH_WAVS[2]);
      expect(ok.status).toBe(200);
      expect(ok.json.text).toBe(referenceTranscript(models.senseVoice, SPEECH_WAVS[2]).text);
      const long = await transcribe(SPEECH_WAVS.find((w) => w.endsWith('-0870.wav'))!);
      expect(long.status).toBe(400);
      expect(long.json.error.message).toMatch(/takes at most 6\.01 s \(100 frames\)/);
    } finally {
      expect(await cli.stop()).toBe(0);
      env.cleanup();
    }
  }, 150_000);
});
