/**
 * What a server `serve-fn dev` runs sends once it listens, with its port: from then on it takes the
 * requests. Its banner ("serve-fn ready at …") comes with it, and `dev` prints it once it forwards
 * to that server: printed by the server itself, it could reach a user (or a script waiting for it)
 * before `dev` had switched, and their first request would meet the 503 of a port with no server.
 */
export const SERVER_READY = 'serve-fn:ready';

export interface ServerReady {
  readonly type: typeof SERVER_READY;
  readonly port: number;
  readonly banner: string;
}
