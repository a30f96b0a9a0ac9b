import type { FastifyBaseLogger } from 'fastify';
import type { RawData, WebSocket } from 'ws';
import type { SocketEndpointDefinition } from '../definition/model-definition.js';
import { createError, ServeFnError, statusOf } from '../errors/index.js';
import type { SocketLink } from '../wire/socket-session.js';
import { RequestValidationError, validateDto } from '../validation/dto-validator.js';
import { jsonDepthExceeds, MAX_JSON_DEPTH } from '../validation/json-depth.js';

/**
 * Client messages, and their bytes, read and not yet taken by the method. Past either the socket
 * stops reading, so TCP pushes back on a client that sends faster than the model consumes; it
 * reads again below half of both.
 */
export const INPUT_WINDOW = 32;
export const INPUT_WINDOW_BYTES = 4 * 1024 * 1024;

/**
 * How long a peer has to answer the server's close frame, and, while the server drains, to take any
 * of what the server is writing to it, before its socket is dropped. ws waits 30 s for the close
 * handshake by default, so one silent peer held a SIGTERM past a 10 s grace period. 5 s is what
 * ASP.NET Core SignalR's WebSocket transport waits (WebSocketOptions.CloseTimeout): a peer that is
 * there answers within a round trip, and one that has stopped reading cannot even receive the frame.
 */
export const CLOSE_TIMEOUT_MS = 5000;

/** RFC 6455 close codes serve-fn uses. */
export const CLOSE = { normal: 1000, goingAway: 1001, policyViolation: 1008, internalError: 1011 } as const;

/** A close frame's reason is at most 123 bytes of UTF-8. */
export function closeReason(message: string): string {
  const bytes = Buffer.from(message, 'utf8');
  return bytes.length <= 123 ? message : `${bytes.subarray(0, 120).toString('utf8').replace(/\uFFFD+$/, '')}...`;
}

function asBuffer(data: RawData): Buffer {
  if (Buffer.isBuffer(data)) return data;
  return Array.isArray(data) ? Buffer.concat(data) : Buffer.from(data);
}

/**
 * One accepted WebSocket connection: validates the client's messages in arrival order and hands
 * them to the session, sends what the session yields (JSON text or binary), and closes the socket
 * when the session ends (1000), fails (1008 for a 4xx error, the protocol cannot go on; 1011
 * otherwise), stays idle too long or the server drains (1001). An invalid message is answered
 * with an error message and the connection stays open.
 */
export class SocketConnection {
  private received: Promise<void> = Promise.resolve();
  private validating = 0;
  private validatingBytes = 0;
  private paused = false;
  private closed = false;
  private readonly idle: NodeJS.Timeout;
  /** Frames handed to ws and not yet written to the socket; the peer's TCP window holds them back. */
  private unwritten = 0;
  private wroteSinceCheck = false;
  /** Runs while frames wait to be written: see checkWrites(). */
  private writeCheck?: NodeJS.Timeout;

  constructor(
    private readonly socket: WebSocket,
    private readonly link: SocketLink,
    private readonly endpoint: SocketEndpointDefinition,
    private readonly modelName: string,
    private readonly log: FastifyBaseLogger,
    private readonly draining: () => boolean,
  ) {
    this.idle = setTimeout(() => this.closeIdle(), endpoint.idleTimeoutMs);
    socket.on('message', (data, isBinary) => this.receive(asBuffer(data), isBinary));
    socket.on('close', () => this.onClientGone());
    socket.on('error', (err) => this.log.debug({ err }, 'WebSocket error'));
    link.whenTaken(() => this.resumeIfRoom());
  }

  /** Resolves once the session has ended and the socket is closing. */
  async run(): Promise<void> {
    try {
      for await (const item of this.link.output) await this.send(item);
      this.close(this.draining() ? CLOSE.goingAway : CLOSE.normal, this.draining() ? 'server shutting down' : '');
    } catch (err) {
      this.fail(err);
    }
  }

  private fail(err: unknown): void {
    const failure = this.asFailure(err);
    if (failure.statusCode >= 500) this.log.error({ err: failure }, 'WebSocket session failed');
    this.sendError(failure);
    this.close(failure.statusCode < 500 ? CLOSE.policyViolation : CLOSE.internalError, closeReason(failure.message));
  }

  private receive(data: Buffer, isBinary: boolean): void {
    this.idle.refresh();
    // Read now: forward() may transfer the buffer to the instance's thread, which empties it here.
    const bytes = data.byteLength;
    this.validating++;
    this.validatingBytes += bytes;
    this.received = this.received
      .then(() => this.forward(data, isBinary))
      // A DTO whose transform or custom validator throws must not stop the input (or go unhandled).
      .catch((err: unknown) => this.fail(err))
      .finally(() => {
        this.validating--;
        this.validatingBytes -= bytes;
        this.resumeIfRoom();
      });
    if (!this.paused && (this.backlog() >= INPUT_WINDOW || this.backlogBytes() >= INPUT_WINDOW_BYTES)) {
      this.paused = true;
      this.socket.pause();
    }
  }

  private async forward(data: Buffer, isBinary: boolean): Promise<void> {
    if (this.closed) return;
    if (isBinary) {
      this.link.send({ kind: 'binary', value: new Uint8Array(data.buffer, data.byteOffset, data.byteLength) }, data.byteLength);
      return;
    }
    const text = data.toString('utf8');
    if (!this.endpoint.message) {
      this.link.send({ kind: 'text', value: text }, data.byteLength);
      return;
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch (err) {
      this.refuse(createError('SF_ERR_MESSAGE_INVALID_JSON', (err as Error).message));
      return;
    }
    if (jsonDepthExceeds(parsed)) {
      this.refuse(createError('SF_ERR_BODY_TOO_DEEP', MAX_JSON_DEPTH));
      return;
    }
    try {
      const message = await validateDto(this.endpoint.message, parsed, 'message', false);
      if (!this.closed) this.link.send({ kind: 'json', value: message }, data.byteLength);
    } catch (err) {
      if (!(err instanceof RequestValidationError)) throw err;
      const invalid = createError('SF_ERR_MESSAGE_INVALID', err.message);
      if (!this.closed) this.link.refuse({ error: invalid.message, code: invalid.code, detail: err.detail });
    }
  }

  private refuse(err: ServeFnError): void {
    if (!this.closed) this.link.refuse({ error: err.message, code: err.code });
  }

  private backlog(): number {
    return this.validating + this.link.pendingInput;
  }

  private backlogBytes(): number {
    return this.validatingBytes + this.link.pendingBytes;
  }

  private resumeIfRoom(): void {
    if (this.paused && this.backlog() <= INPUT_WINDOW / 2 && this.backlogBytes() <= INPUT_WINDOW_BYTES / 2) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private send(item: unknown): Promise<void> {
    if (this.closed || this.socket.readyState !== this.socket.OPEN) return Promise.resolve();
    const data = item instanceof Uint8Array ? item : typeof item === 'string' ? item : JSON.stringify(item ?? null);
    this.unwritten++;
    this.writeCheck ??= setInterval(() => this.checkWrites(), CLOSE_TIMEOUT_MS);
    // Waiting for each frame to be written bounds what waits in memory to one frame plus the credit.
    return new Promise((resolve) =>
      this.socket.send(data, { binary: data instanceof Uint8Array }, () => {
        this.unwritten--;
        this.wroteSinceCheck = true;
        resolve();
      }),
    );
  }

  /**
   * A peer that stops reading holds back what the session sends, which is TCP's backpressure and
   * fine while the server runs. Once it drains, a peer that took nothing for CLOSE_TIMEOUT_MS is
   * dropped: the session's last frames and the 1001 close frame would queue behind what it does
   * not read, and its connection would hold the shutdown for the whole grace period.
   */
  private checkWrites(): void {
    if (this.unwritten === 0) return this.stopWriteCheck();
    if (this.draining() && !this.wroteSinceCheck) {
      this.log.debug('WebSocket peer stopped reading while the server drains; dropping it');
      this.socket.terminate();
    }
    this.wroteSinceCheck = false;
  }

  private stopWriteCheck(): void {
    clearInterval(this.writeCheck);
    this.writeCheck = undefined;
  }

  private sendError(err: ServeFnError): void {
    this.sendJson({ error: err.message, code: err.code });
  }

  private sendJson(body: unknown): void {
    if (!this.closed && this.socket.readyState === this.socket.OPEN) this.socket.send(JSON.stringify(body));
  }

  private asFailure(err: unknown): ServeFnError {
    if (err instanceof ServeFnError) return err;
    const message = String((err as { message?: unknown } | null)?.message ?? err);
    if (statusOf(err) < 500) return createError('SF_ERR_BAD_REQUEST', message);
    return createError('SF_ERR_EXECUTION_FAILED', this.modelName, this.endpoint.id, message);
  }

  private closeIdle(): void {
    // Messages read but not yet taken mean the model, not the client, is behind.
    if (this.paused || this.backlog() > 0) {
      this.idle.refresh();
      return;
    }
    const idle = createError('SF_ERR_SOCKET_IDLE', this.endpoint.idleTimeoutMs);
    this.sendError(idle);
    this.close(CLOSE.goingAway, idle.message);
  }

  private close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idle);
    this.link.close();
    // ws drops a peer that does not answer within its closeTimeout (CLOSE_TIMEOUT_MS, socket-routes.ts), written or not.
    this.socket.close(code, reason);
  }

  private onClientGone(): void {
    this.closed = true;
    clearTimeout(this.idle);
    this.stopWriteCheck();
    this.link.close();
  }
}
