import websocket from '@fastify/websocket';
import type { FastifyInstance } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import { FunAsrMessage, funAsrSession } from '../../adapters/funasr/index.js';
import { parseHotwords } from '../../adapters/funasr/funasr-session.js';
import { createError, statusOf } from '../../errors/index.js';
import { CLOSE, closeReason } from '../../server/socket-connection.js';
import type { ServerSpeechModels } from '../../speech/server-speech-models.js';
import { SpeechModelRecognizer, type RecognizerModels } from '../../speech/speech-model-recognizer.js';
import type { StreamingVad } from '../../adapters/funasr/streaming-vad.js';
import type { ReleasableVad } from '../../speech/speech-chain.js';
import { WholeUtteranceVad } from '../../speech/whole-utterance-vad.js';
import { validateDto } from '../../validation/dto-validator.js';
import { SocketInbox } from '../../wire/socket-session.js';

/**
 * FunASR's WebSocket protocol at `/` (where FunASR's clients connect: `ws://host:port`), over the
 * served speech models: `?model=` picks one, else the first. The session bookkeeping (modes,
 * chunks, is_final) is the FunASR adapter's (src/adapters/funasr), which follows FunASR's C++
 * server: `is_final` is true only on the reply to `{"is_speaking": false}`. With an FSMN-VAD model
 * served beside the ASR model its segments are the offline passes (speech-chain.ts); without one the
 * utterance is one segment. Online passes (modes `online` and `2pass`) go to a streaming Paraformer
 * and whole segments (`offline`, `2pass`) to an offline model, as FunASR's 2pass server pairs them
 * (ServerSpeechModels.recognizerModels); a mode whose model is not served, and hotwords (they need a
 * contextual Paraformer), are refused with an error message and close code 1008.
 */
export async function funAsrSocketRoute(scope: FastifyInstance, models: ServerSpeechModels, maxPayload: number): Promise<void> {
  if (!scope.hasDecorator('websocketServer')) await scope.register(websocket, { options: { maxPayload } });
  scope.get('/', { websocket: true }, (socket: WebSocket, request) => {
    const inbox = new SocketInbox<FunAsrMessage | Uint8Array>(() => undefined);
    let failed = false;
    const fail = (err: unknown): void => {
      if (failed) return;
      failed = true;
      inbox.end();
      const status = statusOf(err);
      if (status >= 500) request.log.error({ err }, 'FunASR WebSocket session failed');
      const message = status >= 500 ? 'the recognizer failed; the server log has the error' : (err as Error).message;
      if (socket.readyState === socket.OPEN) {
        socket.send(JSON.stringify({ error: message, code: (err as { code?: string }).code ?? 'SF_ERR_INTERNAL' }));
        socket.close(status >= 500 ? CLOSE.internalError : CLOSE.policyViolation, closeReason(message));
      }
    };
    let pair: RecognizerModels;
    try {
      pair = models.recognizerModels((request.query as { model?: string }).model);
    } catch (err) {
      fail(err);
      return;
    }
    let chain = Promise.resolve();
    socket.on('message', (data: RawData, isBinary: boolean) => {
      // Parsed in arrival order; a text frame's validation is asynchronous.
      chain = chain.then(async () => {
        if (failed || gone.signal.aborted) return;
        try {
          inbox.push(isBinary ? toBytes(data) : await configFrame(toBytes(data), pair));
        } catch (err) {
          fail(err);
        }
      });
    });
    // The client went away: its frames not yet taken are dropped, its queued offline passes
    // aborted, and once the step in flight settles its open streams (VAD, streaming Paraformer) are
    // ended (below), so their instances free their state now. The sequence batcher's idle expiry
    // (max_sequence_idle_microseconds, 60 s) is then left to what has no connection to end its
    // streams: a KServe v2 client driving the streaming Paraformer's sequences itself, as Triton's.
    const gone = new AbortController();
    socket.on('close', () => {
      gone.abort();
      inbox.end();
    });
    const vad = (pair.offline ?? pair.online)?.chain;
    const recognizer = new SpeechModelRecognizer(pair, gone.signal);
    const vads: ReleasableVad[] = [];
    const createVad = (): StreamingVad => {
      const made = vad?.streamingVad();
      if (!made) return new WholeUtteranceVad();
      vads.push(made);
      return made;
    };
    const session = funAsrSession(untilGone(inbox, gone.signal), { recognizer, createVad });
    void (async () => {
      try {
        for await (const reply of session) if (socket.readyState === socket.OPEN) socket.send(JSON.stringify(reply));
      } catch (err) {
        // A step cut short by the client's going (an aborted offline pass) is no failure to report.
        if (!gone.signal.aborted) fail(err);
      }
      // The session is over (its client gone, or a protocol error): whatever stream it left open ends now.
      const released = await Promise.allSettled([recognizer.release(), ...vads.map((v) => v.release())]);
      for (const r of released) if (r.status === 'rejected') request.log.warn({ err: r.reason }, 'FunASR WebSocket: ending a departed client\'s stream failed; the idle expiry will free it');
    })();
  });
}

/** The inbox's messages until the client goes: what it sent and the session has not taken yet is dropped. */
async function* untilGone<T>(inbox: AsyncIterable<T>, gone: AbortSignal): AsyncGenerator<T> {
  for await (const message of inbox) {
    if (gone.aborted) return;
    yield message;
  }
}

async function configFrame(bytes: Uint8Array, pair: RecognizerModels): Promise<FunAsrMessage> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(new TextDecoder().decode(bytes));
  } catch {
    throw createError('SF_ERR_BAD_REQUEST', 'FunASR protocol: a text frame is not JSON.');
  }
  const message = await validateDto<FunAsrMessage>(FunAsrMessage, parsed, 'message');
  if (message.mode === 'online' && !pair.online) throw createError('SF_ERR_BAD_REQUEST', "FunASR protocol: mode 'online' needs a streaming model, and the served model decodes whole utterances; use mode 'offline' or '2pass'.");
  if ((message.mode === 'offline' || message.mode === '2pass') && !pair.offline) throw createError('SF_ERR_BAD_REQUEST', `FunASR protocol: mode '${message.mode}' needs an offline model, and the served model is a streaming Paraformer; use mode 'online', or serve an offline model beside it (a folder of both, as FunASR's 2pass server takes them).`);
  if (message.hotwords !== undefined && parseHotwords(message.hotwords).length > 0) throw createError('SF_ERR_BAD_REQUEST', 'FunASR protocol: hotwords need a contextual Paraformer (model_eb.onnx), which is not served; send no hotwords.');
  return message;
}

function toBytes(data: RawData): Uint8Array {
  if (Array.isArray(data)) return new Uint8Array(Buffer.concat(data));
  return data instanceof ArrayBuffer ? new Uint8Array(data) : new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
}
