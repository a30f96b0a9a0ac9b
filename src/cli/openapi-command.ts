import { ServeFnServer } from '../serve-fn-server.js';
import { modelsToServe } from './entry-discovery.js';

/** `serve-fn openapi`: prints the OpenAPI document of what `serve-fn start` would serve; no instance is started. */
export async function openapiCommand(entryPath: string | undefined): Promise<void> {
  const server = new ServeFnServer({ ...(await modelsToServe(entryPath)), collectProcessMetrics: false });
  const document = await server.openapi();
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  await server.app.close();
}
