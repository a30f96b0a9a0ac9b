import { recordWebSocketEndpoint } from '../metadata/reflection.js';
import type { WebSocketEndpointOptions } from '../metadata/records.js';

/**
 * Serves a method over WebSocket at `path`. The method is called once per connection, on one
 * instance for the whole connection, with an async iterable of the client's messages and a
 * SocketContext; it returns an async iterable of the messages to send (objects as JSON text,
 * Uint8Array as binary).
 */
export function WebSocketEndpoint(path: string, options: WebSocketEndpointOptions = {}): MethodDecorator {
  return (prototype, propertyKey, descriptor) => {
    recordWebSocketEndpoint(prototype.constructor as new () => unknown, {
      method: String(propertyKey),
      path,
      options: { ...options },
      isFunction: typeof descriptor?.value === 'function',
    });
  };
}
