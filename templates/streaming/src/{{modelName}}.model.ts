import { IsIn, IsInt, IsOptional, IsString, Max, MaxLength, Min, MinLength } from 'class-validator';
import { createError, Endpoint, Instances, Model, WebSocketEndpoint, type SocketContext } from 'serve-fn';

export class GenerateRequest {
  @IsString() @MinLength(1) @MaxLength(1000) prompt!: string;
  /** Milliseconds between tokens, to make the streaming visible. */
  @IsOptional() @IsInt() @Min(0) @Max(1000) delay_ms?: number;
}

/** Control messages of the audio meter; audio itself arrives as binary 16-bit little-endian PCM. */
export class MeterMessage {
  @IsIn(['start', 'stop']) type!: string;
  @IsOptional() @IsInt() @Min(8000) @Max(48000) sample_rate?: number;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Two streaming shapes to start from: an SSE endpoint that yields tokens as they are produced
 * (replace the loop with your generator), and a WebSocket session that keeps per-connection state
 * (replace the level meter with your streaming model, e.g. speech recognition).
 */
@Model({ name: '{{modelName}}', version: '1', description: '{{name}}: a streaming serve-fn model' })
@Instances(2)
export class {{className}} {
  @Endpoint('/generate', { body: GenerateRequest, stream: 'sse', summary: 'Stream the words of the prompt back, one event each' })
  async *generate(request: GenerateRequest): AsyncGenerator<{ index: number; token: string }> {
    const tokens = request.prompt.split(/\s+/).filter((t) => t.length > 0);
    for (const [index, token] of tokens.entries()) {
      if (request.delay_ms) await sleep(request.delay_ms);
      yield { index, token };
    }
  }

  /**
   * Send `{"type":"start","sample_rate":16000}`, then binary PCM frames; each frame is answered with
   * its level, and `{"type":"stop"}` is answered with a summary of the whole connection.
   */
  @WebSocketEndpoint('/ws/meter', { message: MeterMessage, idleTimeoutMs: 30_000, summary: 'Audio level meter over WebSocket' })
  async *meter(messages: AsyncIterable<MeterMessage | Buffer>, ctx: SocketContext): AsyncGenerator<object> {
    let sampleRate = 0;
    let samples = 0;
    let peakDbfs = -Infinity;
    for await (const message of messages) {
      if (!Buffer.isBuffer(message)) {
        if (message.type === 'start') {
          sampleRate = message.sample_rate ?? 16000;
          yield { type: 'started', sample_rate: sampleRate, instance: ctx.instanceIndex };
          continue;
        }
        yield { type: 'summary', seconds: samples / sampleRate, peak_dbfs: round(peakDbfs) };
        return;
      }
      // A 4xx error closes the connection with 1008: the protocol cannot go on without a start.
      if (sampleRate === 0) throw createError('SF_ERR_BAD_REQUEST', 'send {"type":"start"} before audio');
      // The WebSocket library cuts a frame out of the socket's read buffer, so its bytes may start at
      // an odd offset, where an Int16Array view would throw; a DataView reads them wherever they are.
      const pcm = new DataView(message.buffer, message.byteOffset, message.byteLength);
      const count = Math.floor(message.byteLength / 2);
      let sum = 0;
      for (let i = 0; i < count; i++) sum += pcm.getInt16(2 * i, true) ** 2;
      const dbfs = 20 * Math.log10(Math.sqrt(sum / Math.max(1, count)) / 32768 || 1e-10);
      samples += count;
      peakDbfs = Math.max(peakDbfs, dbfs);
      yield { type: 'level', dbfs: round(dbfs), seconds: samples / sampleRate };
    }
  }
}

function round(value: number): number {
  return Math.round(value * 10) / 10;
}
