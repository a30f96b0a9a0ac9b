import { existsSync, mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { credentials, loadPackageDefinition, status, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { GRPC_PROTO_PATH } from '../../src/protocol/grpc/grpc-server.js';
import { ServeFnServer } from '../../src/serve-fn-server.js';
import { makeTinyFunAsrModels, makeTinyVadAndPunctuation, missingPython, SPEECH_WAVS } from '../helpers/speech-python.js';

const missing = missingPython(['onnx', 'numpy']) ?? (existsSync(SPEECH_WAVS[0]) ? undefined : 'pocketsphinx-testdata is not installed');
/** The tiny VAD's segments of this recording (as test/http/speech-chain.test.ts). */
const SEGMENTS_MS = [[230, 900], [900, 1460], [1460, 1810]];

/** The VAD and punctuation folders' KServe v2 models over gRPC, with a client generated from the .proto as tritonclient's is. */
describe.skipIf(missing)(`FSMN-VAD and CT-Transformer folders on gRPC (KServe v2)${missing ? ` (skipped: ${missing})` : ''}`, () => {
  const dir = mkdtempSync(join(tmpdir(), 'speech-chain-grpc-'));
  let server: ServeFnServer;
  let client: InstanceType<ServiceClientConstructor>;

  beforeAll(async () => {
    const asr = makeTinyFunAsrModels(dir);
    const { vad, punctuation } = makeTinyVadAndPunctuation(dir);
    server = new ServeFnServer({ models: [], speechFolders: [asr.paraformer, vad, punctuation], logger: false, collectProcessMetrics: false, grpc: { port: 0, host: '127.0.0.1' } });
    await server.listen(0, '127.0.0.1');
    const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false }));
    const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
    client = new Service(`127.0.0.1:${server.grpcPort}`, credentials.createInsecure());
  }, 120_000);

  afterAll(async () => {
    client?.close();
    await server?.close();
  });

  function call(method: string, request: object): Promise<Record<string, unknown>> {
    return new Promise((resolve, reject) => {
      (client[method] as (r: object, cb: (err: ServiceError | null, res: Record<string, unknown>) => void) => void).call(client, request, (err, res) => (err ? reject(err) : resolve(res)));
    });
  }

  it('ModelMetadata and ModelReady for both; ModelInfer on the VAD answers SEGMENTS as INT32 [n, 2] in raw_output_contents', async () => {
    expect(await call('ModelMetadata', { name: 'fsmn-vad-tiny' })).toMatchObject({ name: 'fsmn-vad-tiny', outputs: [{ name: 'SEGMENTS', datatype: 'INT32', shape: [-1, 2] }] });
    expect(await call('ModelMetadata', { name: 'ct-punc-tiny' })).toMatchObject({ name: 'ct-punc-tiny', inputs: [{ name: 'TEXT', datatype: 'BYTES' }] });
    expect(await call('ModelReady', { name: 'fsmn-vad-tiny' })).toMatchObject({ ready: true });
    expect(await call('ModelReady', { name: 'ct-punc-tiny' })).toMatchObject({ ready: true });
    const answer = await call('ModelInfer', { model_name: 'fsmn-vad-tiny', id: 'v1', inputs: [{ name: 'AUDIO', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [readFileSync(SPEECH_WAVS[0])] } }] });
    expect(answer).toMatchObject({ model_name: 'fsmn-vad-tiny', id: 'v1', outputs: [{ name: 'SEGMENTS', datatype: 'INT32', shape: [3, 2] }] });
    const raw = (answer.raw_output_contents as Buffer[])[0];
    expect(Array.from(new Int32Array(raw.buffer.slice(raw.byteOffset, raw.byteOffset + raw.byteLength)))).toEqual(SEGMENTS_MS.flat());
  });

  it('ModelInfer on the punctuation model answers punctuated text; ModelStatistics counts both', async () => {
    const answer = await call('ModelInfer', { model_name: 'ct-punc-tiny', inputs: [{ name: 'TEXT', datatype: 'BYTES', shape: [1, 1], contents: { bytes_contents: [Buffer.from('今天好吗')] } }] });
    const raw = (answer.raw_output_contents as Buffer[])[0];
    // One BYTES element: its 4-byte length, then the text (test/unit/speech/ct-punctuation.test.ts has the model's rule: 天 → 、, 吗 → ？).
    expect(raw.subarray(4).toString('utf8')).toBe('今天、好吗？');
    const stats = (await call('ModelStatistics', {})) as { model_stats: { name: string; inference_count: number }[] };
    const count = (name: string) => stats.model_stats.find((s) => s.name === name)?.inference_count;
    expect(count('fsmn-vad-tiny')).toBeGreaterThanOrEqual(1);
    expect(count('ct-punc-tiny')).toBeGreaterThanOrEqual(1);
  });

  it('bad audio is INVALID_ARGUMENT; an unknown model NOT_FOUND', async () => {
    await expect(call('ModelInfer', { model_name: 'fsmn-vad-tiny', inputs: [{ name: 'AUDIO', datatype: 'BYTES', shape: [1], contents: { bytes_contents: [Buffer.from('not audio')] } }] })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT, details: expect.stringContaining('Audio could not be used') });
    await expect(call('ModelInfer', { model_name: 'ct-punc-tiny', inputs: [{ name: 'TEXT', datatype: 'INT32', shape: [1, 1], contents: { int_contents: [1] } }] })).rejects.toMatchObject({ code: status.INVALID_ARGUMENT });
    await expect(call('ModelInfer', { model_name: 'no-such-vad', inputs: [] })).rejects.toMatchObject({ code: status.NOT_FOUND });
  });
});
