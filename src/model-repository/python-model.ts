import { existsSync } from 'node:fs';
import { delimiter, isAbsolute, join, resolve } from 'node:path';
import { EXECUTE_METHOD } from '../definition/tensor-interface-builder.js';
import { createError } from '../errors/index.js';
import { InstanceEngine } from '../engine/instance-engine.js';
import type { InstanceEvents } from '../engine/model-instance.js';
import { PythonStubInstance, type BlsRequest, type BlsResponse, type PythonStubServices } from '../engine/python-stub-instance.js';
import { autoCompleteInStub, type StubLaunch } from '../engine/python-stub-process.js';
import { canStream } from '../inference/decoupled-model.js';
import { DecoupledModelVersion } from '../inference/decoupled-model-version.js';
import type { InferRequest, InferResponse } from '../inference/inference-model.js';
import type { ServedModel } from '../inference/served-model.js';
import { TensorModelVersion } from '../inference/tensor-model-version.js';
import { silentLogger } from '../instance/instance-logger.js';
import { PythonCustomMetrics } from '../metrics/python-custom-metrics.js';
import { parseModelConfigJson } from './config-json.js';
import { configTensors } from './config-tensors.js';
import { schedulerFor } from './configured-scheduler.js';
import { instancePlacements, restartPolicyFromParameters } from './instance-placement.js';
import { modelConfigToJson, type ModelConfig } from './model-config.js';
import type { ModelSource } from './model-source.js';
import { contextData, infoFor, type VersionBuilderContext } from './model-version-builder.js';
import { warmupRuns } from './warmup-requests.js';

/**
 * One version of a Triton Python backend model (`backend: "python"`, `<version>/model.py`): its
 * `auto_complete_config` runs first in a stub of its own, then each instance is a stub process
 * (PythonStubInstance) on an InstanceEngine, scheduled from config.pbtxt as every other backend's.
 */
export async function buildPythonModel(source: ModelSource, version: string, file: string, ctx: VersionBuilderContext): Promise<ServedModel> {
  const { name } = source;
  const logger = ctx.logger ?? silentLogger();
  const launch = (instance: string): StubLaunch => ({ ...stubEnvironment(source.config, source.dir), cwd: source.dir, logger, logFields: { model: name, version, instance } });
  let config: ModelConfig;
  try {
    const completed = await autoCompleteInStub(launch('auto_complete_config'), file, modelConfigToJson(source.config));
    config = { ...parseModelConfigJson(JSON.stringify(completed), name).config, backend: 'python', platform: '' };
  } catch (err) {
    throw createError('SF_ERR_INITIALIZE_FAILED', name, 'auto_complete_config', (err as Error).message, { cause: err });
  }
  const placements = instancePlacements(config, 'module', ctx.maxInstances);
  const tensors = configTensors(config);
  const info = infoFor(config, version, tensors);
  const services = stubServices(ctx);
  const engine = new InstanceEngine({
    name,
    version,
    instanceCount: placements.length,
    factory: (index: number, events: InstanceEvents) => new PythonStubInstance(index, {
      file, launch: launch(placements[index].name), outputs: tensors.outputs,
    }, contextData(info, source.dir, placements, index), events, services),
    recorder: ctx.recorder,
    log: ctx.log,
    restartPolicy: restartPolicyFromParameters(config) ?? ctx.restartPolicy,
  });
  const scheduler = schedulerFor(config, version, engine, ctx.log);
  const warmups = warmupRuns(config, tensors.inputs, source.dir);
  return scheduler.decoupled ? new DecoupledModelVersion(info, engine, scheduler.streams, warmups) : new TensorModelVersion(info, engine, scheduler.requests, warmups);
}

/**
 * The interpreter a model's stubs run on. Triton's `EXECUTION_ENV_PATH` parameter names a
 * conda-pack archive it unpacks; here it names the environment's folder (unpacked, or any
 * virtualenv or CANN Python prefix), whose bin/python3 runs the stub with the folder's bin first on
 * PATH. `PYTHON_INTERPRETER` names an interpreter directly. `$$TRITON_MODEL_DIRECTORY` stands for
 * the model's folder in both, as in Triton.
 */
export function stubEnvironment(config: ModelConfig, modelDir: string): Pick<StubLaunch, 'interpreter' | 'env'> {
  const value = (key: string): string | undefined => {
    const raw = config.parameters[key]?.string_value;
    if (raw === undefined || raw === '') return undefined;
    const path = raw.replaceAll('$$TRITON_MODEL_DIRECTORY', modelDir);
    return isAbsolute(path) ? path : resolve(modelDir, path);
  };
  const interpreter = value('PYTHON_INTERPRETER');
  if (interpreter) return { interpreter, env: {} };
  const envPath = value('EXECUTION_ENV_PATH');
  if (!envPath) return { interpreter: 'python3', env: {} };
  if (/\.(tar\.gz|tgz)$/.test(envPath)) {
    throw createError('SF_ERR_CONFIG_INVALID', config.name, `EXECUTION_ENV_PATH '${envPath}' is an archive: serve-fn runs an unpacked environment; unpack it (tar -xzf) and name its folder`);
  }
  const python = join(envPath, 'bin', 'python3');
  if (!existsSync(python)) throw createError('SF_ERR_CONFIG_INVALID', config.name, `EXECUTION_ENV_PATH '${envPath}' has no bin/python3`);
  return { interpreter: python, env: { PATH: [join(envPath, 'bin'), process.env.PATH].filter(Boolean).join(delimiter) } };
}

/** BLS, custom metrics and logs of a model's stubs, through the server's catalogue and registry. */
function stubServices(ctx: VersionBuilderContext): PythonStubServices {
  const metrics = PythonCustomMetrics.of(ctx.recorder.registry);
  const inferRequest = (request: BlsRequest): InferRequest => ({
    ...(request.id ? { id: request.id } : {}),
    inputs: request.inputs,
    ...(request.outputs.length > 0 ? { outputs: request.outputs.map((output) => ({ name: output })) } : {}),
    ...(Object.keys(request.parameters).length > 0 ? { parameters: request.parameters } : {}),
    ...(request.timeoutUs ? { timeoutUs: request.timeoutUs } : {}),
  });
  const blsResponse = (response: InferResponse, final?: boolean): BlsResponse => ({ outputs: response.outputs, ...(response.parameters ? { parameters: response.parameters } : {}), ...(final ? { final } : {}) });
  return {
    // As ctx.infer: the one catalogue, so repository, decorated and text models are all reachable;
    // a decorated class is reached through its tensor interface (`execute`), as BLS sends tensors.
    infer: async (model, version, request) => blsResponse((await ctx.infer(model, inferRequest(request), { method: EXECUTE_METHOD, ...(version ? { version } : {}) })) as InferResponse),
    async inferStream(model, version, request) {
      const target = ctx.resolve(model, version);
      if (!canStream(target)) return [blsResponse(await target.infer(inferRequest(request)), true)];
      const stream = await target.inferStream(inferRequest(request));
      return (async function* () {
        for await (const response of stream) yield blsResponse(response, response.final);
      })();
    },
    metric: (message) => (message.type === 'metric-family' ? metrics.family(message) : metrics.apply(message)),
  };
}
