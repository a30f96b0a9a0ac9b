import { rmSync } from 'node:fs';
import { join } from 'node:path';
import OpenAI from 'openai';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { sdxlReference, writeSdxlFolder, type SdxlCase } from '../helpers/sdxl-fixture.js';
import { missingPython } from '../helpers/speech-python.js';

/** The official openai-node SDK against a server started on a tiny SDXL-shaped folder (worker-thread ONNX stages). */
const noPython = missingPython(['onnx', 'numpy']);
const root = scratchFolder('images-sdxl');
let server: ServeFnServer;
let client: OpenAI;
let base: string;
let dir: string;

beforeAll(async () => {
  dir = writeSdxlFolder(join(root, 'tiny-xl'));
  server = new ServeFnServer({ models: [], diffusionFolders: [dir], logger: false, collectProcessMetrics: false, diffusion: { maxRunning: 8, admissionWaitUs: 2000 } });
  base = await server.listen(0, '127.0.0.1');
  client = new OpenAI({ apiKey: 'test-key', baseURL: `${base}/v1`, maxRetries: 0 });
}, 60_000);

afterAll(async () => {
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

/** The distinct RGB values of a PNG. */
async function colours(png: Buffer): Promise<string[]> {
  const { data, info } = await sharp(png).raw().toBuffer({ resolveWithObject: true });
  const seen = new Set<string>();
  for (let i = 0; i < data.length; i += info.channels) seen.add(`${data[i]},${data[i + 1]},${data[i + 2]}`);
  return [...seen];
}

/** vLLM-Omni's extensions, which the SDK sends as given. */
const extensions = (fields: Record<string, unknown>) => fields as Record<string, never>;

describe('openai SDK images.generate against an SDXL-style folder', () => {
  it.skipIf(noPython)('concurrent requests (SDXL\'s default guidance 5 with zeros as the unconditional branch, a negative prompt, none) each get numpy\'s reference image', async () => {
    const cases: (SdxlCase & { steps: number; sent: Record<string, unknown> })[] = [
      { prompt: 'a red fox', width: 32, height: 16, guidance: 5, steps: 4, sent: {} },
      { prompt: 'blue sky', negativePrompt: 'green hills', width: 32, height: 16, guidance: 3, steps: 9, sent: { negative_prompt: 'green hills', guidance_scale: 3 } },
      { prompt: 'sky', width: 16, height: 32, guidance: 1, steps: 6, sent: { guidance_scale: 1 } },
    ];
    const reference = await sdxlReference(dir, cases);
    const answers = await Promise.all(cases.map((c, i) => client.images.generate({
      model: 'tiny-xl', prompt: c.prompt, size: `${c.width}x${c.height}` as '256x256', ...extensions({ num_inference_steps: c.steps, seed: i, ...c.sent }),
    })));
    for (const [i, answer] of answers.entries()) {
      const png = Buffer.from(answer.data![0].b64_json!, 'base64');
      const meta = await sharp(png).metadata();
      expect([meta.width, meta.height]).toEqual([cases[i].width, cases[i].height]);
      expect({ case: i, colours: await colours(png) }).toEqual({ case: i, colours: [reference[i].pixel.join(',')] });
    }
    const metrics = await (await fetch(`${base}/metrics`)).text();
    expect(metrics).toMatch(/serve_fn_diffusion_steps_total\{model="tiny-xl"\} 19/);
    expect(metrics).toMatch(/nv_inference_exec_count\{model="tiny-xl_text_encoder_2",version="1"\} \d+/);
  });

  it('the second text encoder is a /v2 model of its own', async () => {
    const index = await (await fetch(`${base}/v2/repository/index`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' })).json() as { name: string; state: string }[];
    expect(index.filter((m) => m.name.startsWith('tiny-xl_')).map((m) => `${m.name} ${m.state}`).sort())
      .toEqual(['tiny-xl_denoiser READY', 'tiny-xl_text_encoder READY', 'tiny-xl_text_encoder_2 READY', 'tiny-xl_vae_decoder READY']);
  });
});
