import { credentials, loadPackageDefinition, type GrpcObject, type ServiceClientConstructor, type ServiceError } from '@grpc/grpc-js';
import { loadSync } from '@grpc/proto-loader';
import Fastify, { type FastifyInstance, type LightMyRequestResponse } from 'fastify';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { cohereVllmRoutes } from '../../src/protocol/cohere-vllm/cohere-vllm-routes.js';
import { GRPC_PROTO_PATH, startGrpcServer } from '../../src/protocol/grpc/grpc-server.js';
import { kserveProtocol } from '../../src/protocol/kserve-protocol.js';
import { openAiRoutes } from '../../src/protocol/openai/openai-routes.js';
import { DEFAULT_JSON_BODY_LIMIT, installJsonBodyParser } from '../../src/server/json-body-parser.js';
import type { TextEngine } from '../../src/text/text-engine.js';
import { TextInferenceModel } from '../../src/text/text-inference-model.js';
import { FakeRepository, type FakeModel } from '../protocol/fake-repository.js';
import { teiApp } from './tei-app.js';
import { textModelFor, textModelSetOf, type TextModelOverrides } from './text-model-fixture.js';

/** One model of each task, each named `tiny-<task>`. */
export interface TextModelsByTask {
  readonly embed: TextEngine;
  readonly sparse: TextEngine;
  readonly classify: TextEngine;
  readonly rerank: TextEngine;
}

/**
 * The same text models behind every protocol serve-fn speaks for them: TEI, the OpenAI family
 * (OpenAI, Cohere, Jina, vLLM), KServe v2 over HTTP and over gRPC. Close with `close()`.
 */
export interface TextProtocolApps {
  readonly models: TextModelsByTask;
  readonly tei: FastifyInstance;
  /** OpenAI's, Cohere's, Jina's and vLLM's routes. */
  readonly family: FastifyInstance;
  readonly kserve: FastifyInstance;
  /** One gRPC ModelInfer call, with the request as @grpc/proto-loader takes it (keepCase). */
  readonly grpcInfer: (request: object) => Promise<Record<string, unknown>>;
  close(): Promise<void>;
}

export async function textProtocolApps(overrides: TextModelOverrides = {}): Promise<TextProtocolApps> {
  const [embed, sparse, classify, rerank] = await Promise.all((['embed', 'sparse', 'classify', 'rerank'] as const).map((task) => textModelFor(task, overrides)));
  const all = [embed, sparse, classify, rerank];
  const tei = await teiApp(all);
  const family = Fastify();
  installJsonBodyParser(family, DEFAULT_JSON_BODY_LIMIT);
  await family.register(openAiRoutes, { models: textModelSetOf(all) });
  await family.register(cohereVllmRoutes, { models: textModelSetOf(all) });
  await family.ready();
  const repository = new FakeRepository(all.map((model) => new TextInferenceModel(model, '1') as unknown as FakeModel));
  const recorder = new InferenceRecorder({ collectProcessMetrics: false });
  const kserve = Fastify();
  await kserve.register(kserveProtocol, { repository, recorder, serverName: 'serve-fn', serverVersion: '0.1.0', ready: () => true });
  await kserve.ready();
  const grpc = await startGrpcServer({ repository, serverName: 'serve-fn', serverVersion: '0.1.0', recorder, ready: () => true, port: 0, host: '127.0.0.1' });
  const proto = loadPackageDefinition(loadSync(GRPC_PROTO_PATH, { keepCase: true, longs: Number, enums: String, defaults: false, oneofs: false }));
  const Service = (proto.inference as GrpcObject).GRPCInferenceService as ServiceClientConstructor;
  const client = new Service(`127.0.0.1:${grpc.port}`, credentials.createInsecure());
  return {
    models: { embed, sparse, classify, rerank },
    tei,
    family,
    kserve,
    grpcInfer: (request) => new Promise((resolve, reject) => client.ModelInfer(request, (err: ServiceError | null, res: Record<string, unknown>) => (err ? reject(err) : resolve(res)))),
    async close() {
      client.close();
      await Promise.all([tei.close(), family.close(), kserve.close(), grpc.close(100)]);
    },
  };
}

/** A KServe v2 JSON infer request of texts in the `text` tensor. */
export function kserveTexts(app: FastifyInstance, model: string, texts: readonly string[], parameters: object = {}): Promise<LightMyRequestResponse> {
  const payload = JSON.stringify({ inputs: [{ name: 'text', datatype: 'BYTES', shape: [texts.length], data: texts }], parameters });
  return app.inject({ method: 'POST', url: `/v2/models/${model}/infer`, headers: { 'content-type': 'application/json' }, payload });
}

/** A gRPC ModelInfer request of texts in the `text` tensor, with string or bool parameters. */
export function grpcTexts(model: string, texts: readonly string[], parameters: Record<string, string | boolean> = {}): object {
  return {
    model_name: model,
    inputs: [{ name: 'text', datatype: 'BYTES', shape: [texts.length], contents: { bytes_contents: texts.map((text) => Buffer.from(text)) } }],
    parameters: Object.fromEntries(Object.entries(parameters).map(([key, value]) => [key, typeof value === 'string' ? { string_param: value } : { bool_param: value }])),
  };
}
