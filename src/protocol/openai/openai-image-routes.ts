import { PassThrough } from 'node:stream';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { CancelSignal } from '../../spec/cancel-signal.js';
import { ServeFnError } from '../../errors/index.js';
import type { DecodedImage, DiffusionPipeline } from '../../diffusion/diffusion-pipeline.js';
import { encodeImage } from '../../diffusion/image-encoding.js';
import { disconnectSignal } from '../../server/disconnect-signal.js';
import { ImageFiles, IMAGE_URL_TTL_MS } from './image-files.js';
import { ImageJobs, jobObject } from './image-jobs.js';
import { installOpenAiErrorHandling, toOpenAiError } from './openai-errors.js';
import { requestBody } from './openai-fields.js';
import { readImageRequest, type ImageGenerationRequest } from './openai-images.js';

export interface ImageRoutesOptions {
  readonly pipelines: readonly DiffusionPipeline[];
  readonly exposeErrors: boolean;
  readonly bodyLimit: number;
}

/**
 * OpenAI's Images API over the served diffusion pipelines (platform.openai.com/docs/api-reference/images):
 * POST /v1/images/generations (JSON, or SSE with `stream: true`: `image_generation.partial_image`
 * events, then `image_generation.completed`), GET /v1/images/files/{id} for `response_format: "url"`
 * (served IMAGE_URL_TTL_MS), and a job API modelled on /v1/videos under /v1/images/jobs.
 */
export async function openAiImageRoutes(app: FastifyInstance, opts: ImageRoutesOptions): Promise<void> {
  const files = new ImageFiles();
  const jobs = new ImageJobs();
  app.setValidatorCompiler(() => () => true);
  app.setSerializerCompiler(() => (data) => JSON.stringify(data));
  installOpenAiErrorHandling(app, { flavour: 'openai', exposeErrors: opts.exposeErrors, bodyLimit: opts.bodyLimit });
  const schema = (summary: string) => ({ summary, tags: ['OpenAI-compatible images'] });

  app.post('/v1/images/generations', { schema: schema('Create images (OpenAI)') }, async (request, reply) => {
    const body = readImageRequest(requestBody(request.body), opts.pipelines);
    const signal = disconnectSignal(reply);
    if (body.stream) return streamImages(request, reply, body, signal, files);
    const created = Math.floor(Date.now() / 1000);
    const images = await generateAll(body, signal);
    const data = await Promise.all(images.map((image) => imageDatum(request, body, image, files)));
    return { created, data, output_format: body.outputFormat, size: `${body.width}x${body.height}`, background: 'opaque' };
  });

  app.get<{ Params: { id: string } }>('/v1/images/files/:id', { schema: schema('An image answered by URL') }, async (request, reply) => {
    const file = files.get(request.params.id);
    if (!file) throw new ServeFnError('SF_ERR_NOT_FOUND', `no image '${request.params.id}' (images answered by URL are kept ${IMAGE_URL_TTL_MS / 60000} minutes)`, 404);
    return reply.type(file.contentType).header('cache-control', 'private, max-age=3600').send(file.bytes);
  });

  app.post('/v1/images/jobs', { schema: schema('Submit an image job (modelled on OpenAI /v1/videos)') }, async (request, reply) => {
    const body = readImageRequest(requestBody(request.body), opts.pipelines);
    const job = jobs.create(body.pipeline.name);
    const totalSteps = body.steps * body.n;
    let done = 0;
    void generateAll(body, job.abort.signal, () => {
      if (job.status === 'queued') job.status = 'in_progress';
      job.progress = Math.floor((++done / totalSteps) * 100);
    }).then(
      async (images) => {
        job.images = await Promise.all(images.map(async (image) => ({ bytes: await encodeImage(image, body.outputFormat, body.outputCompression), contentType: `image/${body.outputFormat}` })));
        job.status = 'completed';
      },
      (err: unknown) => {
        if (job.status !== 'cancelled') {
          job.status = 'failed';
          const answer = toOpenAiError(err, 'openai', { bodyLimit: opts.bodyLimit, exposeErrors: opts.exposeErrors, requestId: request.id });
          job.error = { code: String(answer.body.error.code), message: answer.body.error.message };
          request.log.error({ err }, 'image job failed');
        }
      },
    ).finally(() => {
      job.completedAt = Math.floor(Date.now() / 1000);
    });
    return reply.code(200).send(jobObject(job));
  });

  app.get<{ Params: { id: string } }>('/v1/images/jobs/:id', { schema: schema('An image job\'s status') }, async (request) => jobObject(jobs.get(request.params.id)));

  app.get<{ Params: { id: string }; Querystring: { index?: string } }>('/v1/images/jobs/:id/content', { schema: schema('An image job\'s image') }, async (request, reply) => {
    const job = jobs.get(request.params.id);
    const index = Number(request.query.index ?? 0);
    const image = job.images?.[index];
    if (job.status !== 'completed' || !image) throw new ServeFnError('SF_ERR_BAD_REQUEST', `job '${job.id}' is ${job.status}${job.status === 'completed' ? ` and has no image ${index}` : ''}`, 400);
    return reply.type(image.contentType).send(image.bytes);
  });

  app.delete<{ Params: { id: string } }>('/v1/images/jobs/:id', { schema: schema('Cancel and delete an image job') }, async (request) => ({ ...jobObject(jobs.delete(request.params.id)), deleted: true }));
}

/** The request's `n` images, each its own denoising (seed, seed + 1, ... when a seed is given). */
function generateAll(body: ImageGenerationRequest, signal: CancelSignal, onStep?: () => void, onPartial?: (image: DecodedImage, index: number, which: number) => void): Promise<DecodedImage[]> {
  return Promise.all(Array.from({ length: body.n }, (_, which) => body.pipeline.generate({
    prompt: body.prompt, negativePrompt: body.negativePrompt, width: body.width, height: body.height, steps: body.steps, guidanceScale: body.guidanceScale,
    seed: body.seed === undefined ? undefined : body.seed + which, signal, onStep, partialImages: onPartial ? body.partialImages : 0,
    onPartial: onPartial && ((image, index) => onPartial(image, index, which)),
  })));
}

async function imageDatum(request: FastifyRequest, body: ImageGenerationRequest, image: DecodedImage, files: ImageFiles): Promise<Record<string, string>> {
  const bytes = await encodeImage(image, body.outputFormat, body.outputCompression);
  if (body.responseFormat === 'b64_json') return { b64_json: bytes.toString('base64') };
  const id = files.put(bytes, body.outputFormat);
  return { url: `${request.protocol}://${request.host}/v1/images/files/${id}` };
}

/** SSE as OpenAI streams images: `event: <type>` and `data: <json>` per event, the event's type in the JSON too. */
async function streamImages(request: FastifyRequest, reply: FastifyReply, body: ImageGenerationRequest, signal: CancelSignal, files: ImageFiles): Promise<FastifyReply> {
  const out = new PassThrough();
  const size = `${body.width}x${body.height}`;
  const common = { background: 'opaque', output_format: body.outputFormat, quality: 'auto', size };
  const send = (type: string, fields: Record<string, unknown>) => out.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...fields, ...common, created_at: Math.floor(Date.now() / 1000) })}\n\n`);
  void (async () => {
    try {
      const pending: Promise<unknown>[] = [];
      const images = await generateAll(body, signal, undefined, (image, index) => {
        const sending = encodeImage(image, body.outputFormat, body.outputCompression).then((bytes) => send('image_generation.partial_image', { b64_json: bytes.toString('base64'), partial_image_index: index }));
        // Handled now, so a failed preview never rejects unhandled while generation goes on; awaited below.
        sending.catch(() => undefined);
        pending.push(sending);
      }).finally(() => Promise.allSettled(pending));
      await Promise.all(pending);
      for (const image of images) {
        const datum = await imageDatum(request, body, image, files);
        send('image_generation.completed', { b64_json: datum.b64_json ?? '', ...(datum.url ? { url: datum.url } : {}), usage: { input_tokens: 0, output_tokens: 0, total_tokens: 0, input_tokens_details: { image_tokens: 0, text_tokens: 0 } } });
      }
    } catch (err) {
      const answer = toOpenAiError(err, 'openai', { bodyLimit: 0, exposeErrors: false, requestId: request.id });
      out.write(`event: error\ndata: ${JSON.stringify(answer.body)}\n\n`);
    } finally {
      out.end();
    }
  })();
  return reply.code(200).header('cache-control', 'no-cache').type('text/event-stream').send(out);
}
