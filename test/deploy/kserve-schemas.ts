import type { SchemaObject } from 'ajv';

/*
 * JSON Schemas for the two KServe kinds in deploy/kserve/, hand-written and deliberately partial.
 * KServe publishes no npm package with its CRD schemas, and this repository keeps no copies of
 * fetched ones, so these describe exactly the fields our manifests set, typed as the KServe API
 * reference documents them. Every object KServe defines is closed (additionalProperties: false):
 * a misspelt field, or one serve-fn was never deployed with, fails here even where the real CRD
 * would take it, so a manifest valid here stays within what we know KServe accepts. Adding a field
 * to a manifest means adding it here first.
 *
 * Containers are Kubernetes core/v1 Containers. The test validates each one in full with
 * kubernetes-models; the container schema below pins only the fields serve-fn relies on and
 * leaves the rest (env, probes, securityContext) to that check.
 */

// The API reference lists these for both the predictor's protocolVersion and a runtime's protocolVersions.
const PROTOCOL_VERSIONS = ['v1', 'v2', 'grpc-v1', 'grpc-v2'];

const DNS_1123_LABEL = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?$';
const DNS_1123_SUBDOMAIN = '^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$';
// KServe names the predictor's Service after the InferenceService, and Service names are DNS-1035 labels.
const DNS_1035_LABEL = '^[a-z]([-a-z0-9]*[a-z0-9])?$';
// Kubernetes resource.Quantity: a decimal number with an optional binary-SI, decimal-SI or exponent suffix.
const QUANTITY = '^[+-]?([0-9]+(\\.[0-9]*)?|\\.[0-9]+)([KMGTPE]i|[numkMGTPE]|[eE][+-]?[0-9]+)?$';

const stringMap: SchemaObject = { type: 'object', additionalProperties: { type: 'string' } };

const objectMeta = (name: SchemaObject): SchemaObject => ({
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name, labels: stringMap, annotations: stringMap },
});

const integer = (minimum: number, maximum?: number): SchemaObject => ({ type: 'integer', minimum, ...(maximum === undefined ? {} : { maximum }) });

const modelFormat: SchemaObject = {
  type: 'object',
  required: ['name'],
  additionalProperties: false,
  properties: { name: { type: 'string', minLength: 1 }, version: { type: 'string', minLength: 1 } },
};

const quantities: SchemaObject = {
  type: 'object',
  additionalProperties: { anyOf: [{ type: 'string', pattern: QUANTITY }, { type: 'number', minimum: 0 }] },
};

const containerPort: SchemaObject = {
  type: 'object',
  required: ['containerPort'],
  additionalProperties: false,
  properties: {
    containerPort: integer(1, 65535),
    // An IANA service name, so that probes and Services can refer to the port by it.
    name: { type: 'string', maxLength: 15, pattern: DNS_1123_LABEL },
    protocol: { type: 'string', enum: ['TCP', 'UDP', 'SCTP'] },
  },
};

const runtimeContainer: SchemaObject = {
  type: 'object',
  required: ['name', 'image'],
  properties: {
    name: { type: 'string', maxLength: 63, pattern: DNS_1123_LABEL },
    image: { type: 'string', minLength: 1 },
    args: { type: 'array', items: { type: 'string' } },
    ports: { type: 'array', items: containerPort },
    resources: { type: 'object', additionalProperties: false, properties: { requests: quantities, limits: quantities } },
  },
};

/** `serving.kserve.io/v1beta1` InferenceService with a `predictor.model` served by a named runtime. */
export const inferenceServiceSchema: SchemaObject = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  additionalProperties: false,
  properties: {
    apiVersion: { type: 'string', const: 'serving.kserve.io/v1beta1' },
    kind: { type: 'string', const: 'InferenceService' },
    metadata: objectMeta({ type: 'string', maxLength: 63, pattern: DNS_1035_LABEL }),
    spec: {
      type: 'object',
      required: ['predictor'],
      additionalProperties: false,
      properties: {
        predictor: {
          type: 'object',
          required: ['model'],
          additionalProperties: false,
          properties: {
            minReplicas: integer(0),
            maxReplicas: integer(0),
            terminationGracePeriodSeconds: integer(0),
            model: {
              type: 'object',
              required: ['modelFormat'],
              additionalProperties: false,
              properties: {
                modelFormat,
                runtime: { type: 'string', minLength: 1 },
                protocolVersion: { type: 'string', enum: PROTOCOL_VERSIONS },
                storageUri: { type: 'string', pattern: '^[a-z][a-z0-9+.-]*://.+' },
              },
            },
          },
        },
      },
    },
  },
};

/** `serving.kserve.io/v1alpha1` ServingRuntime: the pod template KServe runs for the model formats it lists. */
export const servingRuntimeSchema: SchemaObject = {
  type: 'object',
  required: ['apiVersion', 'kind', 'metadata', 'spec'],
  additionalProperties: false,
  properties: {
    apiVersion: { type: 'string', const: 'serving.kserve.io/v1alpha1' },
    kind: { type: 'string', const: 'ServingRuntime' },
    metadata: objectMeta({ type: 'string', maxLength: 253, pattern: DNS_1123_SUBDOMAIN }),
    spec: {
      type: 'object',
      required: ['supportedModelFormats', 'containers'],
      additionalProperties: false,
      properties: {
        annotations: stringMap,
        supportedModelFormats: {
          type: 'array',
          minItems: 1,
          items: { ...modelFormat, properties: { ...modelFormat.properties, autoSelect: { type: 'boolean' } } },
        },
        protocolVersions: { type: 'array', uniqueItems: true, items: { type: 'string', enum: PROTOCOL_VERSIONS } },
        containers: { type: 'array', minItems: 1, items: runtimeContainer },
      },
    },
  },
};
