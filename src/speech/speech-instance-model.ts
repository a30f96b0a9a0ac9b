import { availableParallelism } from 'node:os';
import type { BackendSession } from '../backends/backend.js';
import type { ModelContext } from '../definition/model-context.js';
import type { ExecuteRequest, ExecuteResponse, TensorModel } from '../instance/tensor-model-api.js';
import { createError } from '../errors/index.js';
import { createTensor } from '../tensor/tensor-factory.js';
import type { Tensor } from '../spec/tensor.js';
import { DEFAULT_AUDIO_LIMITS, decodeAudioFile, decodePcm16, type AudioLimits } from './audio-input.js';
import { readSpeechFolder } from './speech-folder.js';
import { SpeechRecognizer, languageId, type Utterance } from './speech-recognizer.js';
import { SPEECH_INPUTS, SPEECH_OUTPUTS } from './speech-tensors.js';

/**
 * A speech folder's model inside its instance's thread, hosted as a repository model.ts is
 * (module-executor.ts): the folder's ONNX file in ONNX Runtime, and the audio decoding, resampling
 * and front end here too, off the HTTP thread. Each execution is one forward pass over every
 * utterance of its batch; an utterance whose audio is bad fails alone, with its 400.
 */
export default class SpeechInstanceModel implements TensorModel {
  private recognizer?: SpeechRecognizer;
  private session?: BackendSession;
  private limits: AudioLimits = DEFAULT_AUDIO_LIMITS;
  private name = '';

  async initialize(ctx: ModelContext): Promise<void> {
    const parameter = (key: string): string | undefined => ((ctx.config.parameters as Record<string, { string_value?: string }> | undefined)?.[key])?.string_value;
    const device = parameter('device');
    const folder = readSpeechFolder(ctx.modelDir, { quantize: parameter('quantize') === 'true', ...(device === 'cpu' || device === 'npu' ? { device } : {}) });
    this.limits = { ...DEFAULT_AUDIO_LIMITS, maxSeconds: Number(parameter('max_audio_seconds') ?? DEFAULT_AUDIO_LIMITS.maxSeconds) };
    this.name = ctx.modelName;
    if (folder.device === 'npu') {
      // A model.om runs through npu_om (AscendCL) on the NPU --npu-device names; the front end stays on this thread's CPU.
      this.session = await ctx.loadModel(folder.modelFile, { device: `npu:${parameter('npu_device') ?? '0'}` });
    } else {
      // The instances share the cores: each runs ORT on its share, as TEI's one ORT session takes them all.
      const threads = Math.max(1, Math.floor(availableParallelism() / ctx.instanceCount));
      this.session = await ctx.loadModel(folder.modelFile, { options: { intraOpNumThreads: threads } });
    }
    this.recognizer = new SpeechRecognizer(folder, this.session);
  }

  async execute(requests: readonly ExecuteRequest[]): Promise<ExecuteResponse[]> {
    const parsed = requests.map((request) => {
      try {
        return { utterances: this.utterances(request) };
      } catch (error) {
        return { error: error as Error };
      }
    });
    const all = parsed.flatMap((p) => p.utterances ?? []);
    const results = await this.recognizer!.transcribe(all);
    let next = 0;
    return parsed.map((p): ExecuteResponse => {
      if (!p.utterances) return { error: p.error! };
      const mine = results.slice(next, (next += p.utterances.length));
      const encoder = new TextEncoder();
      return {
        outputs: [
          createTensor(SPEECH_OUTPUTS.transcript, 'BYTES', [mine.length, 1], mine.map((r) => encoder.encode(r.text))),
          createTensor(SPEECH_OUTPUTS.result, 'BYTES', [mine.length, 1], mine.map((r) => encoder.encode(JSON.stringify(r)))),
        ],
      };
    });
  }

  /** One utterance per row of the request's batch. */
  private utterances(request: ExecuteRequest): Utterance[] {
    const audio = request.input(SPEECH_INPUTS.audio)!.data as Uint8Array[];
    const rates = request.input(SPEECH_INPUTS.sampleRate);
    const languages = request.input(SPEECH_INPUTS.language);
    const itns = request.input(SPEECH_INPUTS.itn);
    return audio.map((bytes, row) => {
      const rate = rates ? rowValue(rates, row) : 0;
      const decoded = rate > 0 ? decodePcm16(bytes, rate, this.limits) : decodeAudioFile(bytes, this.limits);
      const language = languages ? new TextDecoder().decode((languages.data as Uint8Array[])[row]) : undefined;
      languageId(language);
      this.checkCompiledLength(decoded.samples.length, decoded.seconds);
      return { samples: decoded.samples, duration: decoded.seconds, language, itn: itns ? rowValue(itns, row) === 1 : undefined };
    });
  }

  /** A compiled .om takes at most its frames: a longer utterance fails alone, with its 400 naming the limit in seconds. */
  private checkCompiledLength(samples: number, seconds: number): void {
    const recognizer = this.recognizer!;
    if (recognizer.compiledFrames === undefined || recognizer.frameCount(samples) <= recognizer.compiledFrames) return;
    throw createError('SF_ERR_AUDIO_OVER_MODEL_LENGTH', seconds.toFixed(2), this.name, recognizer.compiledSeconds!.toFixed(2), String(recognizer.compiledFrames));
  }
}

function rowValue(tensor: Tensor, row: number): number {
  return Number((tensor.data as Int32Array | Uint8Array)[row]);
}
