import { featureExtraction, InferenceClient, InferenceClientProviderApiError, InferenceClientProviderOutputError, sentenceSimilarity, textClassification } from '@huggingface/inference';
import type { FastifyInstance } from 'fastify';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TextModel } from '../../src/text/text-model.js';
import { cosine, norm, teiApp } from '../helpers/tei-app.js';
import { textModelFor } from '../helpers/text-model-fixture.js';

/**
 * @huggingface/inference aimed at TEI routes, as its docs show for Inference Endpoints: with
 * `endpointUrl` the client POSTs its task's JSON body (`{inputs, ...parameters}`) to that URL as it
 * is, with no route of its own added (its hf-inference helper's makeUrl), and checks the answer's shape.
 */
async function listening(model: TextModel): Promise<{ app: FastifyInstance; base: string }> {
  const app = await teiApp([model]);
  return { app, base: await app.listen({ host: '127.0.0.1', port: 0 }) };
}

let embedder: TextModel;
let classifier: TextModel;
let embedServer: { app: FastifyInstance; base: string };
let classifyServer: { app: FastifyInstance; base: string };

beforeAll(async () => {
  [embedder, classifier] = await Promise.all([textModelFor('embed', { pooling: 'mean' }), textModelFor('classify')]);
  [embedServer, classifyServer] = await Promise.all([listening(embedder), listening(classifier)]);
});

afterAll(async () => {
  await Promise.all([embedServer?.app.close(), classifyServer?.app.close()]);
});

describe('@huggingface/inference on the TEI routes', () => {
  it('featureExtraction on /embed and on the model’s own POST / answers the engine’s embeddings', async () => {
    const direct = await embedder.embed(['What is Deep Learning?', 'Paris']);
    const expected = direct.values.map((v) => Array.from(v));
    for (const endpointUrl of [`${embedServer.base}/embed`, embedServer.base]) {
      const output = await featureExtraction({ endpointUrl, inputs: ['What is Deep Learning?', 'Paris'] });
      expect(output).toEqual(expected);
    }
    const single = await featureExtraction({ endpointUrl: `${embedServer.base}/embed`, inputs: 'Paris' });
    expect(single).toEqual([expected[1]]);
  });

  it('featureExtraction passes TEI’s parameters through: normalize, truncate, truncation_direction, prompt_name, dimensions', async () => {
    const endpointUrl = `${embedServer.base}/embed`;
    const [raw] = (await featureExtraction({ endpointUrl, inputs: 'Paris', normalize: false })) as number[][];
    expect(norm(raw)).not.toBeCloseTo(1, 3);
    const [cut] = (await featureExtraction({ endpointUrl, inputs: 'Paris', dimensions: 4, truncate: true, truncation_direction: 'left' })) as number[][];
    const head = raw.slice(0, 4);
    cut.forEach((x, i) => expect(x).toBeCloseTo(head[i] / norm(head), 5));
    const [name, prompt] = Object.entries(embedder.info.prompts)[0] ?? [];
    expect(name, 'the fixture embedder has prompts').toBeDefined();
    const [prompted] = (await featureExtraction({ endpointUrl, inputs: 'Paris', prompt_name: name })) as number[][];
    const [written] = (await featureExtraction({ endpointUrl, inputs: `${prompt}Paris` })) as number[][];
    prompted.forEach((x, i) => expect(x).toBeCloseTo(written[i], 5));
  });

  it('featureExtraction on /embed_all answers token vectors, which the client accepts', async () => {
    const output = (await featureExtraction({ endpointUrl: `${embedServer.base}/embed_all`, inputs: 'deep learning' })) as number[][][];
    const tokens = await embedder.tokenize(['deep learning']);
    expect(output).toHaveLength(1);
    expect(output[0]).toHaveLength(tokens[0].length);
  });

  it('InferenceClient.endpoint(...) and sentenceSimilarity on /similarity answer the cosines', async () => {
    const client = new InferenceClient().endpoint(`${embedServer.base}/similarity`);
    const sentences = ['Machine learning', 'Soup'];
    const scores = await client.sentenceSimilarity({ inputs: { source_sentence: 'Deep learning', sentences } });
    const raw = (await embedder.embed(['Deep learning', ...sentences], { normalize: false })).values.map((v) => Array.from(v));
    expect(scores).toHaveLength(2);
    scores.forEach((s, i) => expect(s).toBeCloseTo(cosine(raw[0], raw[i + 1]), 5));
    expect(await sentenceSimilarity({ endpointUrl: `${embedServer.base}/similarity`, inputs: { source_sentence: 'Deep learning', sentences } })).toEqual(scores);
  });

  it('textClassification reads the batch form TEI answers for [[text]]', async () => {
    const labels = classifier.info.labels;
    for (const endpointUrl of [`${classifyServer.base}/predict`, classifyServer.base]) {
      // The client's check wants `[[{label, score}]]` (the hf-inference answer); TEI answers that for a batch.
      const output = await textClassification({ endpointUrl, inputs: [['I like you']] as unknown as string });
      expect(output.map((l) => l.label).sort()).toEqual([...labels].sort());
      const direct = await classifier.predict(['I like you']);
      expect(output).toEqual(direct.values[0].map(({ score, label }) => ({ score, label })));
    }
  });

  it('textClassification of a bare string meets TEI’s flat answer, which the client refuses as malformed', async () => {
    // TEI answers `[{score, label}]` for one string (its PredictResponse::Single); so does serve-fn.
    await expect(textClassification({ endpointUrl: `${classifyServer.base}/predict`, inputs: 'I like you' })).rejects.toBeInstanceOf(InferenceClientProviderOutputError);
  });

  it('a refused request reaches the caller as the client’s error, with TEI’s message and status', async () => {
    const err = await featureExtraction({ endpointUrl: `${embedServer.base}/embed`, inputs: [] }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InferenceClientProviderApiError);
    const apiError = err as InferenceClientProviderApiError;
    expect(apiError.message).toMatch(/cannot be empty/);
    expect(apiError.httpResponse.status).toBe(400);
    expect(apiError.httpResponse.body).toMatchObject({ error_type: 'Empty' });
  });
});
