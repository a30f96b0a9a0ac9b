import { rmSync } from 'node:fs';
import { join } from 'node:path';
import { credentials, loadPackageDefinition, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRPC_PROTO_PATH } from '../../src/protocol/grpc/grpc-server.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { scratchFolder } from '../fixtures/repository/repository-files.js';
import { oraclePixel, writeDiffusionFolder } from '../helpers/diffusion-fixture.js';

/** A diffusion pipeline's KServe v2 model over gRPC, with a client generated from the .proto as tritonclient's is. */
const root = scratchFolder('diffusion-grpc');
let server: ServeFnServer;
let client: InstanceType<ServiceClientConstructor>;

beforeAll(async () => {
  const dir = writeDiffusionFolder(join(root, 'tiny-dit'), { denoiser: 'flow' });
  server = new ServeFnServer({ models: [], diffusionFolders: [dir], logger: false, collectProcessMetrics: false, grpc: { port: 0, host: '127.0.0.1' } });
  await server.listen(0, '127.0.0.1');
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false }));
  const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  client = new Service(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
}, 60_000);

afterAll(async () => {
  client?.close();
  await server?.close();
  rmSync(root, { recursive: true, force: true });
});

function call(method: string, request: object): Promise<Record<string, unknown>> {
  return new Promise((resolve, reject) => {
    (client[method] as (r: object, cb: (err: ServiceError | null, res: Record<string, unknown>) => void) => void).call(client, request, (err, res) => (err ? reject(err) : resolve(res)));
  });
}

const prompt = (text: string) => ({ name: 'prompt', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from(text)] } });

describe('a diffusion pipeline on gRPC (KServe v2)', () => {
  it('ModelMetadata names the prompt in and the image out; the stages are models too', async () => {
    const metadata = await call('ModelMetadata', { name: 'tiny-dit' });
    expect(metadata).toMatchObject({ name: 'tiny-dit', platform: 'serve-fn', outputs: [{ name: 'image', datatype: 'UINT8', shape: [-1, -1, 3] }] });
    expect((metadata.inputs as { name: string }[]).map((i) => i.name)).toEqual(['prompt', 'negative_prompt']);
    const vae = await call('ModelMetadata', { name: 'tiny-dit_vae_decoder' });
    expect(vae).toMatchObject({ outputs: [{ name: 'image', datatype: 'UINT8' }] });
  });

  it('ModelInfer answers the oracle\'s image as UINT8 [height, width, 3] in raw_output_contents; parameters set size, steps and seed', async () => {
    const answer = await call('ModelInfer', {
      model_name: 'tiny-dit', id: 'img-1', inputs: [prompt('blue sky')],
      parameters: { width: { int64_param: 32 }, height: { int64_param: 16 }, num_inference_steps: { int64_param: 3 }, seed: { int64_param: 7 }, guidance_scale: { double_param: 1 } },
    });
    expect(answer).toMatchObject({ model_name: 'tiny-dit', id: 'img-1', outputs: [{ name: 'image', datatype: 'UINT8', shape: [16, 32, 3] }] });
    const raw = (answer.raw_output_contents as Buffer[])[0];
    expect(raw.length).toBe(16 * 32 * 3);
    const pixel = await oraclePixel('blue sky');
    expect(new Set([...raw].map((v, i) => (v === pixel[i % 3] ? 'ok' : `${i}:${v}`)))).toEqual(new Set(['ok']));
  });

  it('a size that is not a multiple of 16 is INVALID_ARGUMENT; an unknown model is NOT_FOUND', async () => {
    await expect(call('ModelInfer', { model_name: 'tiny-dit', inputs: [prompt('x')], parameters: { width: { int64_param: 20 } } })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('multiples of 16') });
    await expect(call('ModelInfer', { model_name: 'no-such-dit', inputs: [prompt('x')] })).rejects.toMatchObject({ code: status.NOT_FOUND });
  });
});
