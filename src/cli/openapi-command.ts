import { ServeFnServer } from '../server/serve-fn-server.js';
import { findEntry, loadModels } from './entry-discovery.js';

/** `serve-fn openapi`: prints the OpenAPI document; no instance is started. */
export async function openapiCommand(entryPath: string | undefined): Promise<void> {
  const entry = findEntry(entryPath);
  const server = new ServeFnServer({ models: await loadModels(entry), moduleUrl: entry.moduleUrl, collectProcessMetrics: false });
  const document = await server.openapi();
  process.stdout.write(`${JSON.stringify(document, null, 2)}\n`);
  await server.app.close();
}
