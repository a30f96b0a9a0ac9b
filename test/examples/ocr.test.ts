import { readFileSync } from 'node:fs';
import sharp from 'sharp';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { buildDefinitions, ServeFnServer } from '../../src/index.js';
import * as allExamples from '../../examples/index.js';
import { ctcGreedyDecode } from '../../examples/ocr/ctc-decoder.js';
import { boxesFromProbabilityMap } from '../../examples/ocr/db-postprocess.js';
import { OcrDetector, OcrRecognizer } from '../../examples/ocr/index.js';
import { minAreaRect, type Point } from '../../examples/ocr/min-area-rect.js';
import { readingOrder } from '../../examples/ocr/reading-order.js';
import { prepareRecBatch, toRecHeight } from '../../examples/ocr/rec-preprocess.js';
import { TEXT_IMAGE_LINES } from '../fixtures/ocr/make-text-image.js';
import { metricsCounts, statisticsCounts } from '../helpers/statistics-and-metrics.js';

const PNG = readFileSync(new URL('../fixtures/ocr/text-lines.png', import.meta.url));
/** How far a box edge may sit from the ink it encloses: DB's unclip adds a margin of a few pixels. */
const BOX_TOLERANCE_PX = 8;

interface OcrLine {
  text: string;
  score: number;
  box_score: number;
  box: number[][];
}

const squeeze = (text: string): string => text.replace(/\s+/g, '');

/** The ink's bounding box of each fixture line, measured on the fixture itself: the ground truth for the boxes. */
async function inkBoxes(): Promise<{ x0: number; x1: number; y0: number; y1: number }[]> {
  const { data, info } = await sharp(PNG).greyscale().raw().toBuffer({ resolveWithObject: true });
  return TEXT_IMAGE_LINES.map((line) => {
    const box = { x0: Infinity, x1: -Infinity, y0: Infinity, y1: -Infinity };
    for (let y = Math.round(line.baseline - line.size); y < Math.round(line.baseline + 0.4 * line.size); y++) {
      for (let x = 0; x < info.width; x++) {
        if (data[y * info.width + x] >= 128) continue;
        [box.x0, box.x1, box.y0, box.y1] = [Math.min(box.x0, x), Math.max(box.x1, x), Math.min(box.y0, y), Math.max(box.y1, y)];
      }
    }
    return box;
  });
}

function multipart(field: string, bytes: Uint8Array, filename: string, type: string): { payload: Buffer; headers: Record<string, string> } {
  const boundary = '----serve-fn-ocr-test';
  const head = `--${boundary}\r\ncontent-disposition: form-data; name="${field}"; filename="${filename}"\r\ncontent-type: ${type}\r\n\r\n`;
  const payload = Buffer.concat([Buffer.from(head), bytes, Buffer.from(`\r\n--${boundary}--\r\n`)]);
  return { payload, headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } };
}

describe('OCR example (PP-OCRv4 det -> crop -> rec over ctx.infer)', () => {
  let server: ServeFnServer;

  beforeAll(async () => {
    server = new ServeFnServer({
      models: [OcrDetector, OcrRecognizer],
      moduleUrl: new URL('../../examples/ocr/index.ts', import.meta.url).href,
      collectProcessMetrics: false,
    });
    await server.start();
  });

  afterAll(async () => {
    await server?.close();
  });

  const upload = (bytes: Uint8Array, filename = 'page.png', type = 'image/png') =>
    server.app.inject({ method: 'POST', url: '/ocr', ...multipart('image', bytes, filename, type) });

  it('reads every line of the fixture, in order, with boxes around the ink', async () => {
    const res = await upload(PNG);
    expect(res.statusCode).toBe(200);
    const body = res.json() as { width: number; height: number; lines: OcrLine[] };
    expect([body.width, body.height]).toEqual([640, 280]);
    expect(body.lines.map((l) => squeeze(l.text))).toEqual(TEXT_IMAGE_LINES.map((l) => squeeze(l.text)));
    const ink = await inkBoxes();
    for (const [i, line] of body.lines.entries()) {
      expect(line.box).toHaveLength(4);
      const xs = line.box.map((p) => p[0]);
      const ys = line.box.map((p) => p[1]);
      const [tl, tr, br, bl] = line.box;
      expect(tl[0] < tr[0] && bl[0] < br[0] && tl[1] < bl[1] && tr[1] < br[1]).toBe(true);
      for (const [got, want] of [[Math.min(...xs), ink[i].x0], [Math.max(...xs), ink[i].x1], [Math.min(...ys), ink[i].y0], [Math.max(...ys), ink[i].y1]]) {
        expect(Math.abs(got - want)).toBeLessThanOrEqual(BOX_TOLERANCE_PX);
      }
      expect(line.score).toBeGreaterThan(0.9);
      expect(line.box_score).toBeGreaterThan(0.6);
    }
  });

  it('reads a base64 JPEG and a data URL the same way as the upload', async () => {
    const jpeg = await sharp(PNG).jpeg({ quality: 85 }).toBuffer();
    for (const image of [jpeg.toString('base64'), `data:image/jpeg;base64,${jpeg.toString('base64')}`]) {
      const res = await server.app.inject({ method: 'POST', url: '/ocr/base64', payload: { image } });
      expect(res.statusCode).toBe(200);
      expect(res.json().lines.map((l: OcrLine) => squeeze(l.text))).toEqual(TEXT_IMAGE_LINES.map((l) => squeeze(l.text)));
    }
  });

  it('reads the lines of a page turned by 5 degrees, with boxes turned alike', async () => {
    const turned = await sharp(PNG).rotate(5, { background: '#ffffff' }).png().toBuffer();
    const res = await upload(turned);
    expect(res.statusCode).toBe(200);
    const lines = res.json().lines as OcrLine[];
    expect(lines.map((l) => squeeze(l.text))).toEqual(TEXT_IMAGE_LINES.map((l) => squeeze(l.text)));
    for (const { box } of lines) {
      const slope = Math.atan2(box[1][1] - box[0][1], box[1][0] - box[0][0]) * (180 / Math.PI);
      expect(slope).toBeGreaterThan(3.5);
      expect(slope).toBeLessThan(6.5);
    }
  });

  it('runs the 12 lines of 4 concurrent requests through ocr-rec in fewer than 12 batches', async () => {
    const before = await recCounters();
    const answers = await Promise.all(Array.from({ length: 4 }, () => upload(PNG)));
    for (const res of answers) expect(res.json().lines.map((l: OcrLine) => squeeze(l.text))).toEqual(TEXT_IMAGE_LINES.map((l) => squeeze(l.text)));
    const after = await recCounters();
    expect(after.inferences - before.inferences).toBe(12);
    expect(after.executions - before.executions).toBeLessThan(12);
  });

  async function recCounters(): Promise<{ inferences: number; executions: number }> {
    const text = (await server.app.inject({ method: 'GET', url: '/metrics' })).body;
    const read = (name: string): number => Number(text.match(new RegExp(`^${name}\\{model="ocr-rec",version="1"\\} (\\d+)`, 'm'))?.[1] ?? 0);
    return { inferences: read('nv_inference_count'), executions: read('nv_inference_exec_count') };
  }

  it('answers an image without text with no lines', async () => {
    const blank = await sharp({ create: { width: 300, height: 120, channels: 3, background: '#ffffff' } }).png().toBuffer();
    const res = await upload(blank);
    expect(res.statusCode).toBe(200);
    expect(res.json()).toEqual({ width: 300, height: 120, lines: [] });
  });

  it('answers bytes that are not an image with 400', async () => {
    const res = await upload(Buffer.from('this is not a picture'));
    expect(res.statusCode).toBe(400);
    expect(res.json().code).toBe('SF_ERR_BAD_REQUEST');
    expect(res.json().error).toMatch(/^The image could not be decoded \(send PNG, JPEG, WebP, TIFF or GIF\): /);
  });

  it('answers an empty file with 400', async () => {
    const res = await upload(Buffer.alloc(0));
    expect(res.statusCode).toBe(400);
    expect(res.json()).toEqual({ error: 'The image is empty (0 bytes).', code: 'SF_ERR_BAD_REQUEST' });
  });

  it('answers a file of another type with 422 naming the accepted types', async () => {
    const res = await upload(Buffer.from('hello'), 'notes.txt', 'text/plain');
    expect(res.statusCode).toBe(422);
    expect(res.json().detail[0]).toMatchObject({
      loc: ['body', 'image'],
      msg: 'image must be an uploaded file of at most 20971520 bytes of type image/png, image/jpeg, image/webp, image/tiff, image/gif',
    });
  });

  it('refuses an SVG, whatever the upload calls it, with 415 before rendering it, and keeps serving', async () => {
    // Rendering this takes sharp minutes (measured past 120 s); its header takes milliseconds.
    const bomb = Buffer.from('<svg xmlns="http://www.w3.org/2000/svg" width="6000" height="6000"><filter id="f"><feGaussianBlur stdDeviation="900"/><feMorphology radius="300"/></filter><rect width="6000" height="6000" filter="url(#f)"/></svg>');
    const refusal = {
      error: "Content type 'image/svg+xml' is not accepted by OCR; send PNG, JPEG, WebP, TIFF or GIF.",
      code: 'SF_ERR_UNSUPPORTED_MEDIA_TYPE',
    };
    const uploaded = await upload(bomb, 'page.png', 'image/png');
    expect([uploaded.statusCode, uploaded.json()]).toEqual([415, refusal]);
    const sent = await server.app.inject({ method: 'POST', url: '/ocr/base64', payload: { image: `data:image/png;base64,${bomb.toString('base64')}` } });
    expect([sent.statusCode, sent.json()]).toEqual([415, refusal]);
    const page = await upload(PNG);
    expect(page.statusCode).toBe(200);
  });

  it('answers text that is not base64 with 400', async () => {
    const res = await server.app.inject({ method: 'POST', url: '/ocr/base64', payload: { image: 'not base64 at all!' } });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('image is not valid base64 (or a data:image/...;base64, URL).');
  });

  it('answers a crop whose bytes do not match its size with 400, from its slot of the batch', async () => {
    const form = multipart('pixels', Buffer.alloc(10), 'line.rgb', 'application/octet-stream');
    const body = Buffer.concat([
      Buffer.from('------serve-fn-ocr-test\r\ncontent-disposition: form-data; name="width"\r\n\r\n4\r\n'),
      Buffer.from('------serve-fn-ocr-test\r\ncontent-disposition: form-data; name="height"\r\n\r\n48\r\n'),
      form.payload,
    ]);
    const res = await server.app.inject({ method: 'POST', url: '/ocr/recognize', payload: body, headers: form.headers });
    expect(res.statusCode).toBe(400);
    expect(res.json().error).toBe('pixels holds 10 bytes; a 4 x 48 RGB crop has 576.');
  });

  it('answers KServe v2 infer on ocr-rec with the text and score its /ocr/recognize route reads from the same crop', async () => {
    const line = TEXT_IMAGE_LINES[0];
    const top = Math.round(line.baseline - line.size) - 4;
    const height = Math.round(1.4 * line.size) + 8;
    const { data, info } = await sharp(PNG).removeAlpha().extract({ left: 0, top, width: 640, height }).raw().toBuffer({ resolveWithObject: true });
    const crop = { width: info.width, height: info.height, pixels: new Uint8Array(data) };
    const x = prepareRecBatch([toRecHeight(crop)]);

    const form = multipart('pixels', data, 'line.rgb', 'application/octet-stream');
    const fields = Buffer.from(`------serve-fn-ocr-test\r\ncontent-disposition: form-data; name="width"\r\n\r\n${crop.width}\r\n------serve-fn-ocr-test\r\ncontent-disposition: form-data; name="height"\r\n\r\n${crop.height}\r\n`);
    const [route, infer] = await Promise.all([
      server.app.inject({ method: 'POST', url: '/ocr/recognize', payload: Buffer.concat([fields, form.payload]), headers: form.headers }),
      server.app.inject({ method: 'POST', url: '/v2/models/ocr-rec/infer', payload: { inputs: [{ name: 'x', datatype: 'FP32', shape: x.shape, data: Array.from(x.data as Float32Array) }] } }),
    ]);
    expect([route.statusCode, infer.statusCode]).toEqual([200, 200]);
    const [text, score] = infer.json().outputs;
    expect([text.name, text.datatype, text.shape, score.name, score.shape]).toEqual(['TEXT', 'BYTES', [1, 1], 'SCORE', [1, 1]]);
    expect(squeeze(text.data[0])).toBe(squeeze(line.text));
    expect(text.data[0]).toBe(route.json().text);
    expect(score.data[0]).toBeCloseTo(route.json().score, 6);
  });

  it('answers 400 for an empty crop or an empty batch sent to ocr-rec, which its interface does not take', async () => {
    for (const shape of [[1, 3, 48, 0], [0, 3, 48, 16]]) {
      const res = await server.app.inject({ method: 'POST', url: '/v2/models/ocr-rec/infer', payload: { inputs: [{ name: 'x', datatype: 'FP32', shape, data: [] }] } });
      expect([res.statusCode, res.json().code], String(shape)).toEqual([400, 'SF_ERR_TENSOR_DATA']);
      expect(res.json().error).toMatch(/^Tensor 'x': shape \[[\d,]+\] has (an empty dimension \(index 3\)|a batch of 0 rows); model 'ocr-rec' takes no empty input there\.$/);
    }
  });

  it('counts in /v2 statistics what /metrics counts, for both OCR models', async () => {
    const stats = await statisticsCounts(server.app);
    expect(Object.keys(stats)).toEqual(['ocr:1', 'ocr-rec:1']);
    expect(stats).toEqual(await metricsCounts(server.app));
    expect(stats['ocr:1'].success).toBeGreaterThan(0);
    expect(stats['ocr-rec:1'].success).toBeGreaterThan(0);
  });
});

describe('examples/index.ts', () => {
  it('serves the OCR models next to the other examples', () => {
    expect(buildDefinitions(Object.values(allExamples)).map((d) => d.name).sort()).toEqual(['asr', 'cosyvoice', 'ocr', 'ocr-rec', 'silero-vad']);
  });
});

describe('OCR post-processing', () => {
  it('finds a tilted rectangle as the minimum-area rectangle of its points', () => {
    const angle = (20 * Math.PI) / 180;
    const points: Point[] = [];
    for (let u = 0; u <= 100; u += 5) for (let v = 0; v <= 20; v += 5) points.push([10 + u * Math.cos(angle) - v * Math.sin(angle), 50 + u * Math.sin(angle) + v * Math.cos(angle)]);
    const rect = minAreaRect(points);
    expect(rect.width).toBeCloseTo(100, 6);
    expect(rect.height).toBeCloseTo(20, 6);
    const expected = [[10, 50], [10 + 100 * Math.cos(angle), 50 + 100 * Math.sin(angle)], [10 + 100 * Math.cos(angle) - 20 * Math.sin(angle), 50 + 100 * Math.sin(angle) + 20 * Math.cos(angle)], [10 - 20 * Math.sin(angle), 50 + 20 * Math.cos(angle)]];
    rect.corners.forEach((corner, i) => {
      expect(corner[0]).toBeCloseTo(expected[i][0], 6);
      expect(corner[1]).toBeCloseTo(expected[i][1], 6);
    });
  });

  it('turns a block of high probability into one grown, scaled box', () => {
    const [width, height] = [64, 32];
    const data = new Float32Array(width * height);
    for (let y = 10; y <= 19; y++) for (let x = 8; x <= 47; x++) data[y * width + x] = 0.9;
    const boxes = boxesFromProbabilityMap({ data, width, height }, 128, 64);
    expect(boxes).toHaveLength(1);
    expect(boxes[0].score).toBeCloseTo(0.9, 6);
    // 39 x 9 between pixel centres; unclip distance = area * 1.5 / perimeter = 351 * 1.5 / 96 = 5.484375.
    const d = (39 * 9 * 1.5) / 96;
    expect(boxes[0].quad).toEqual([
      [Math.round((8 - d) * 2), Math.round((10 - d) * 2)],
      [Math.round((47 + d) * 2), Math.round((10 - d) * 2)],
      [Math.round((47 + d) * 2), Math.round((19 + d) * 2)],
      [Math.round((8 - d) * 2), Math.round((19 + d) * 2)],
    ]);
  });

  it('drops regions too thin or too faint to be text', () => {
    const [width, height] = [32, 32];
    const data = new Float32Array(width * height);
    for (let x = 2; x < 30; x++) data[3 * width + x] = 0.9;
    for (let y = 10; y < 20; y++) for (let x = 5; x < 25; x++) data[y * width + x] = 0.5;
    expect(boxesFromProbabilityMap({ data, width, height }, 32, 32)).toEqual([]);
  });

  it('orders boxes by line, then left to right within a line', () => {
    const quad = (x: number, y: number) => [[x, y], [x + 10, y], [x + 10, y + 5], [x, y + 5]] as const;
    expect(readingOrder([quad(50, 42), quad(0, 0), quad(5, 40), quad(40, 3)])).toEqual([1, 3, 2, 0]);
  });

  it('decodes CTC output greedily: repeats merged, blanks dropped, mean score', () => {
    const charset = ['', 'a', 'b', ' '];
    const steps = [[0.1, 0.8, 0.05, 0.05], [0.1, 0.6, 0.2, 0.1], [0.9, 0.05, 0.05, 0], [0.1, 0.7, 0.1, 0.1], [0.2, 0.1, 0.6, 0.1]];
    const [line] = ctcGreedyDecode(Float32Array.from(steps.flat()), 1, 5, charset);
    expect(line.text).toBe('aab');
    expect(line.score).toBeCloseTo((0.8 + 0.7 + 0.6) / 3, 6);
  });
});
