/** What a server `serve-fn dev` runs sends once it listens, with its port: from then on it takes the requests. */
export const SERVER_READY = 'serve-fn:ready';

export interface ServerReady {
  readonly type: typeof SERVER_READY;
  readonly port: number;
}
