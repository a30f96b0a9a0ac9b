import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Ajv, ValidationError, type ErrorObject, type SchemaObject } from 'ajv';
import { DockerfileParser } from 'dockerfile-ast';
import { ServiceMonitor } from '@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1';
import { Deployment } from 'kubernetes-models/apps/v1';
import { HorizontalPodAutoscaler } from 'kubernetes-models/autoscaling/v2';
import { PodDisruptionBudget } from 'kubernetes-models/policy/v1';
import { ConfigMap, Container, Service } from 'kubernetes-models/v1';
import { parse, parseAllDocuments } from 'yaml';
import { describe, expect, it } from 'vitest';
import { InferenceRecorder } from '../../src/metrics/inference-recorder.js';
import { shutdownDelayMs } from '../../src/cli/start-command.js';
import { securityOptionsFromEnv } from '../../src/server/security-env.js';
import { inferenceServiceSchema, servingRuntimeSchema } from './kserve-schemas.js';
import { parseStartArguments } from './start-command-arguments.js';

// Manifests are typed loosely: the schemas check their shape, the tests then read them freely.
type Manifest = { apiVersion: string; kind: string; metadata: { name: string; [field: string]: any }; [field: string]: any };

const rootDir = fileURLToPath(new URL('../../', import.meta.url));

interface Loaded {
  readonly file: string;
  readonly manifest: Manifest;
}

function yamlFiles(dir: string): string[] {
  return readdirSync(dir, { withFileTypes: true }).flatMap((entry) => {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) return yamlFiles(path);
    return /\.ya?ml$/.test(entry.name) ? [path] : [];
  });
}

function loadManifests(): Loaded[] {
  return yamlFiles(join(rootDir, 'deploy')).flatMap((path) => {
    const file = relative(rootDir, path);
    return parseAllDocuments(readFileSync(path, 'utf8')).map((doc) => {
      if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors.map((e) => e.message).join('; ')}`);
      return { file, manifest: doc.toJS() as Manifest };
    });
  });
}

const manifests = loadManifests();

function one(kind: string): Manifest {
  const found = manifests.filter((m) => m.manifest.kind === kind);
  if (found.length !== 1) throw new Error(`expected one ${kind}, found ${found.length}`);
  return found[0].manifest;
}

/** Schema errors as `/instance/path message (extra field)`, one line each. */
const describeErrors = (errors: readonly Partial<ErrorObject>[], pathPrefix = ''): string[] =>
  errors.map((e) => `${pathPrefix}${e.instancePath} ${e.message}${e.params?.additionalProperty ? ` (${e.params.additionalProperty})` : ''}`);

/** Errors from a kubernetes-models `validate()`, which throws Ajv's ValidationError. */
function modelErrors(model: { validate(): void }, pathPrefix = ''): string[] {
  try {
    model.validate();
    return [];
  } catch (error) {
    if (error instanceof ValidationError) return describeErrors(error.errors, pathPrefix);
    throw error;
  }
}

type Check = (manifest: Manifest) => string[];

/**
 * kubernetes-models validates against the upstream OpenAPI schemas: types, required fields, enums
 * and the exact apiVersion. Those schemas leave objects open, so a misspelt field in a core or
 * ServiceMonitor manifest passes here, as it does on an API server without strict field validation.
 */
function modelCheck<T>(Model: new (data: T) => { validate(): void }): Check {
  return (manifest) => modelErrors(new Model(manifest as T));
}

function kserveCheck(ajv: Ajv, schema: SchemaObject): Check {
  const validate = ajv.compile(schema);
  return (manifest) => {
    const errors = validate(manifest) ? [] : describeErrors(validate.errors!);
    const containers: unknown[] = Array.isArray(manifest.spec?.containers) ? manifest.spec.containers : [];
    containers.forEach((container, i) => errors.push(...modelErrors(new Container(container as Container), `/spec/containers/${i}`)));
    return errors;
  };
}

const ajv = new Ajv({ allErrors: true, strict: true });
const checksByKind: Record<string, Check> = {
  Deployment: modelCheck(Deployment),
  Service: modelCheck(Service),
  HorizontalPodAutoscaler: modelCheck(HorizontalPodAutoscaler),
  PodDisruptionBudget: modelCheck(PodDisruptionBudget),
  ConfigMap: modelCheck(ConfigMap),
  ServiceMonitor: modelCheck(ServiceMonitor),
  InferenceService: kserveCheck(ajv, inferenceServiceSchema),
  ServingRuntime: kserveCheck(ajv, servingRuntimeSchema),
};

/** What schema validation says about a manifest: [] when it is accepted. */
function schemaErrors(manifest: Manifest): string[] {
  const check = checksByKind[manifest.kind];
  return check ? check(manifest) : [`no schema for ${manifest.apiVersion} ${manifest.kind}`];
}

const clone = <T>(value: T): T => structuredClone(value);

describe('deploy/ manifests against the Kubernetes, Prometheus Operator and KServe schemas', () => {
  it('finds every kind the deployment needs', () => {
    expect(manifests.map((m) => `${m.file}: ${m.manifest.apiVersion} ${m.manifest.kind}`).sort()).toEqual([
      'deploy/kserve/inference-service.yaml: serving.kserve.io/v1beta1 InferenceService',
      'deploy/kserve/serving-runtime.yaml: serving.kserve.io/v1alpha1 ServingRuntime',
      'deploy/kubernetes/deployment.yaml: apps/v1 Deployment',
      'deploy/kubernetes/horizontal-pod-autoscaler.yaml: autoscaling/v2 HorizontalPodAutoscaler',
      'deploy/kubernetes/pod-disruption-budget.yaml: policy/v1 PodDisruptionBudget',
      'deploy/kubernetes/prometheus-adapter/config-map.yaml: v1 ConfigMap',
      'deploy/kubernetes/service-monitor.yaml: monitoring.coreos.com/v1 ServiceMonitor',
      'deploy/kubernetes/service.yaml: v1 Service',
    ]);
  });

  it.each(manifests.map((m) => [`${m.file}: ${m.manifest.kind} ${m.manifest.metadata.name}`, m.manifest] as const))('%s is valid', (_name, manifest) => {
    expect(schemaErrors(manifest)).toEqual([]);
  });

  // Each broken copy must fail for its own reason, not for some other error the change happens to cause.
  const brokenCopies: [label: string, kind: string, change: (m: Manifest) => unknown, expectedError: string][] = [
    ['retired API version', 'Deployment', (m) => (m.apiVersion = 'apps/v1beta1'), '/apiVersion must be equal to one of the allowed values'],
    ['replica count as a string', 'Deployment', (m) => (m.spec.replicas = '2'), '/spec/replicas must be integer'],
    ['port as a string', 'Deployment', (m) => (m.spec.template.spec.containers[0].ports[0].containerPort = '8000'), '/spec/template/spec/containers/0/ports/0/containerPort must be integer'],
    ['probe handler as a string', 'Deployment', (m) => (m.spec.template.spec.containers[0].readinessProbe.httpGet = '/v2/health/ready'), '/spec/template/spec/containers/0/readinessProbe/httpGet must be object'],
    ['service port name as port', 'Service', (m) => (m.spec.ports[0].port = 'http'), '/spec/ports/0/port must be integer'],
    ['metric target without type', 'HorizontalPodAutoscaler', (m) => delete m.spec.metrics[0].pods.target.type, '/spec/metrics/0/pods/target must have required property type'],
    ['budget as an object', 'PodDisruptionBudget', (m) => (m.spec.maxUnavailable = { count: 1 }), '/spec/maxUnavailable must be string'],
    ['adapter config as a mapping', 'ConfigMap', (m) => (m.data['config.yaml'] = { rules: [] }), '/data/config.yaml must be string'],
    ['scrape scheme that is no scheme', 'ServiceMonitor', (m) => (m.spec.endpoints[0].scheme = 'tcp'), '/spec/endpoints/0/scheme must be equal to one of the allowed values'],
    ['scrape interval in words', 'ServiceMonitor', (m) => (m.spec.endpoints[0].interval = '15 seconds'), '/spec/endpoints/0/interval must match pattern'],
    ['protocolVersion on the predictor instead of its model', 'InferenceService', (m) => (m.spec.predictor.protocolVersion = 'v2'), '/spec/predictor must NOT have additional properties (protocolVersion)'],
    ['framework spec the schema leaves out', 'InferenceService', (m) => (m.spec.predictor.sklearn = { storageUri: 's3://x' }), '/spec/predictor must NOT have additional properties (sklearn)'],
    ['unknown metadata field', 'InferenceService', (m) => (m.metadata.label = { a: 'b' }), '/metadata must NOT have additional properties (label)'],
    ['protocol version KServe does not define', 'InferenceService', (m) => (m.spec.predictor.model.protocolVersion = 'v3'), '/spec/predictor/model/protocolVersion must be equal to one of the allowed values'],
    ['name that cannot name a Service', 'InferenceService', (m) => (m.metadata.name = '2-sentiment'), '/metadata/name must match pattern'],
    ['container port as a string', 'ServingRuntime', (m) => (m.spec.containers[0].ports[0].containerPort = 'http'), '/spec/containers/0/ports/0/containerPort must be integer'],
    ['misspelt gRPC protocol version', 'ServingRuntime', (m) => (m.spec.protocolVersions[1] = 'grpc_v2'), '/spec/protocolVersions/1 must be equal to one of the allowed values'],
    ['runtime probe handler as a string', 'ServingRuntime', (m) => (m.spec.containers[0].readinessProbe.httpGet = '/v2/health/ready'), '/spec/containers/0/readinessProbe/httpGet must be object'],
  ];
  it.each(brokenCopies)('refuses a broken copy: %s (%s)', (_label, kind, change, expected) => {
    const copy = clone(one(kind));
    change(copy);
    const errors = schemaErrors(copy);
    expect(errors.some((e) => e.startsWith(expected)), errors.join('\n')).toBe(true);
  });
});

const deployment = one('Deployment');
const pod = deployment.spec.template;
const container = pod.spec.containers[0];
const service = one('Service');
const runtime = one('ServingRuntime');
const runtimeContainer = runtime.spec.containers[0];
const isvc = one('InferenceService');

const selects = (selector: Record<string, string>, labels: Record<string, string> = {}): boolean =>
  Object.keys(selector).length > 0 && Object.entries(selector).every(([k, v]) => labels[k] === v);

/** Milliseconds a pod spends before SIGTERM reaches serve-fn: its preStop sleep. */
function preStopMs(c: any): number {
  const command = c.lifecycle?.preStop?.exec?.command as string[] | undefined;
  if (!command) return 0;
  expect(command[0]).toBe('sleep');
  return Number(command[1]) * 1000;
}

/** Milliseconds serve-fn keeps serving after SIGTERM with readiness 503: --shutdown-delay, else SERVE_FN_SHUTDOWN_DELAY_MS, else its default. */
async function shutdownDelayOf(c: any): Promise<number> {
  const args = await parseStartArguments(c.args);
  const env = (c.env ?? []).find((e: any) => e.name === 'SERVE_FN_SHUTDOWN_DELAY_MS');
  return args.shutdownDelay ?? shutdownDelayMs(env?.value);
}

describe('Deployment, Service and probes', () => {
  it('selects its own pods, and so do the Service, the PodDisruptionBudget and the ServiceMonitor', () => {
    expect(selects(deployment.spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
    expect(selects(service.spec.selector, pod.metadata.labels)).toBe(true);
    expect(selects(one('PodDisruptionBudget').spec.selector.matchLabels, pod.metadata.labels)).toBe(true);
    expect(selects(one('ServiceMonitor').spec.selector.matchLabels, service.metadata.labels)).toBe(true);
  });

  it('routes the Service and the ServiceMonitor to named container ports 8000 (http) and 8001 (grpc)', () => {
    expect(container.ports.map((p: any) => [p.name, p.containerPort])).toEqual([
      ['http', 8000],
      ['grpc', 8001],
    ]);
    const names = container.ports.map((p: any) => p.name);
    for (const port of service.spec.ports) expect(names, port.name).toContain(port.targetPort);
    const endpoint = one('ServiceMonitor').spec.endpoints[0];
    expect(service.spec.ports.map((p: any) => p.name)).toContain(endpoint.port);
    expect(endpoint.path).toBe('/metrics');
  });

  it('probes liveness and readiness on the v2 health routes of a declared port', () => {
    for (const c of [container, runtimeContainer]) {
      const names = c.ports.map((p: any) => p.name);
      expect([c.startupProbe.httpGet.path, c.livenessProbe.httpGet.path, c.readinessProbe.httpGet.path]).toEqual(['/v2/health/live', '/v2/health/live', '/v2/health/ready']);
      for (const probe of [c.startupProbe, c.livenessProbe, c.readinessProbe]) expect(names).toContain(probe.httpGet.port);
    }
  });

  it('ends the pod only after any preStop sleep and the full serve-fn drain', async () => {
    const args = await parseStartArguments(container.args);
    expect(args.gracePeriod).toBe(30_000);
    expect(pod.spec.terminationGracePeriodSeconds * 1000).toBeGreaterThan(preStopMs(container) + args.gracePeriod);
  });

  it('waits once, 5 s, for endpoints to drop the pod before draining: a preStop sleep or serve-fn\'s shutdown delay, not both', async () => {
    for (const c of [container, runtimeContainer]) {
      const waits = [preStopMs(c), await shutdownDelayOf(c)].filter((ms) => ms > 0);
      expect(waits).toEqual([5000]);
    }
  });

  it('serves the models volume it mounts, as the image user, with settings serve-fn accepts', async () => {
    const args = await parseStartArguments(container.args);
    const mount = container.volumeMounts.find((m: any) => m.mountPath === args.entries[0]);
    expect(mount).toMatchObject({ name: 'models', readOnly: true });
    expect(pod.spec.volumes.map((v: any) => v.name)).toEqual(expect.arrayContaining(container.volumeMounts.map((m: any) => m.name)));
    const dockerfile = DockerfileParser.parse(readFileSync(join(rootDir, 'Dockerfile'), 'utf8'));
    const uid = dockerfile.getARGs().find((a) => a.getProperty()?.getName() === 'SERVE_FN_UID')?.getProperty()?.getValue();
    expect(String(pod.spec.securityContext.runAsUser)).toBe(uid);
    const env = Object.fromEntries(container.env.map((e: any) => [e.name, e.value ?? 'secret-from-cluster']));
    expect(securityOptionsFromEnv(env)).toEqual({ apiKey: 'secret-from-cluster', requestTimeoutMs: 60_000 });
    expect(Number(env.SERVE_FN_PORT)).toBe(container.ports.find((p: any) => p.name === 'http').containerPort);
  });
});

describe('autoscaling on pending requests', () => {
  const hpa = one('HorizontalPodAutoscaler');
  const adapter = parse(one('ConfigMap').data['config.yaml']) as { rules: any[] };

  it('scales the Deployment between sane bounds', () => {
    expect(hpa.spec.scaleTargetRef).toEqual({ apiVersion: deployment.apiVersion, kind: deployment.kind, name: deployment.metadata.name });
    expect(hpa.spec.minReplicas).toBeGreaterThanOrEqual(1);
    expect(hpa.spec.maxReplicas).toBeGreaterThan(hpa.spec.minReplicas);
  });

  it('asks for a per-pod metric that the adapter rule serves from a series serve-fn exports', async () => {
    const metric = hpa.spec.metrics[0];
    expect(metric.type).toBe('Pods');
    const name = metric.pods.metric.name as string;
    const rule = adapter.rules.find((r) => r.name.as === name);
    expect(rule).toBeDefined();
    expect(rule.seriesQuery.startsWith(`${name}{`)).toBe(true);
    expect(rule.resources.overrides).toEqual({ namespace: { resource: 'namespace' }, pod: { resource: 'pod' } });
    expect(rule.metricsQuery).toContain('<<.Series>>{<<.LabelMatchers>>}');
    const recorder = new InferenceRecorder({ collectProcessMetrics: false });
    recorder.registerModel('m', '1');
    const exported = await recorder.registry.metrics();
    expect(exported).toContain(`# TYPE ${name} gauge`);
    expect(exported).toContain(`${name}{model="m",version="1"} 0`);
  });
});

describe('KServe', () => {
  it('points the InferenceService at the serve-fn runtime with the v2 protocol', () => {
    const model = isvc.spec.predictor.model;
    expect(model.runtime).toBe(runtime.metadata.name);
    expect(runtime.spec.supportedModelFormats).toContainEqual(expect.objectContaining(model.modelFormat));
    expect(model.protocolVersion).toBe('v2');
    expect(runtime.spec.protocolVersions).toContain(model.protocolVersion);
  });

  it('runs serve-fn on the storage initializer folder with HTTP 8000 first and gRPC 8001, in raw deployment mode', async () => {
    const args = await parseStartArguments(runtimeContainer.args);
    expect(args.entries).toEqual(['/mnt/models']);
    expect(runtimeContainer.ports.map((p: any) => [p.name, p.containerPort])).toEqual([
      ['http', 8000],
      ['grpc', 8001],
    ]);
    // Knative (serverless) mode exposes one port; raw mode maps all of them onto the Service.
    expect(isvc.metadata.annotations['serving.kserve.io/deploymentMode']).toBe('RawDeployment');
    expect(runtime.spec.annotations['prometheus.kserve.io/port']).toBe('8000');
  });

  it('lets the predictor drain fully before it is killed', async () => {
    const args = await parseStartArguments(runtimeContainer.args);
    expect(isvc.spec.predictor.terminationGracePeriodSeconds * 1000).toBeGreaterThan(args.gracePeriod + preStopMs(runtimeContainer));
  });
});

describe('image', () => {
  it("is serve-fn's, at the package version, in both the Deployment and the serving runtime", () => {
    const { version } = JSON.parse(readFileSync(join(rootDir, 'package.json'), 'utf8')) as { version: string };
    expect(container.image).toBe(`registry.example.com/serve-fn:${version}`);
    expect(runtimeContainer.image).toBe(container.image);
  });
});
