import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { REPO_ROOT, startCli, type RunningCli } from './cli-harness.js';

const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Swagger UI as a person sees it: a real headless Chromium against the real CLI. */
describe('Swagger UI in Chromium', () => {
  let cli: RunningCli;
  let browser: Browser;

  beforeAll(async () => {
    if (!existsSync(CHROMIUM)) throw new Error(`${CHROMIUM} is missing: apt-get install -y chromium (.ci/run does this)`);
    // The quickstart, with a WebSocket route beside it, under the title its serve-fn.config.ts gives.
    cli = await startCli(['start', 'test/fixtures/swagger-ui', '--host', '127.0.0.1']);
    await cli.waitForOutput(/serve-fn ready/, 30_000);
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      args: ['--no-sandbox', '--disable-gpu', '--disable-background-networking', '--disable-component-update', '--disable-sync', '--no-first-run'],
    });
  });

  afterAll(async () => {
    await browser?.close();
    await cli?.stop();
  });

  it('lists the quickstart endpoints and "Try it out" on /prosody returns 200', async () => {
    const page = await browser.newPage();
    await page.goto(`${cli.base}/docs`);
    await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
    const paths = await page.locator('.opblock-summary-path').allInnerTexts();
    expect(paths.map((p) => p.replace(/\u200b/g, '').trim())).toEqual(expect.arrayContaining(['/inference_sft', '/prosody']));

    const op = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: '/prosody' }) });
    await op.locator('.opblock-summary').click();
    await op.getByRole('button', { name: 'Try it out' }).click();
    await op.locator('textarea.body-param__text').fill('{"text": "serve models from node", "speed": 1}');
    await op.getByRole('button', { name: 'Execute' }).click();
    const status = op.locator('.live-responses-table .response .response-col_status').first();
    await status.waitFor({ timeout: 20_000 });
    expect((await status.innerText()).trim()).toBe('200');
    const body = await op.locator('.live-responses-table .response-col_description pre').first().innerText();
    expect(JSON.parse(body)).toEqual({ duration_ms: 1400, syllables: 7, words: 4, batch_size: 1 });
    await page.screenshot({ path: join(REPO_ROOT, 'test', '.tmp', 'swagger-ui.png'), fullPage: true });
  });

  it("shows no top bar (fastify's logo, an Explore box) and lists the KServe v2 tags collapsed below the models' own", async () => {
    const page = await browser.newPage();
    await page.goto(`${cli.base}/docs`);
    await page.waitForSelector('.opblock-summary-path', { timeout: 20_000 });
    expect(await page.locator('.topbar').count()).toBe(0);
    const tags = (await page.locator('.opblock-tag-section').evaluateAll((sections) =>
      sections.map((section) => ({ tag: section.querySelector('.opblock-tag')?.getAttribute('data-tag'), open: section.classList.contains('is-open') })),
    )) as { tag: string; open: boolean }[];
    const kserve = tags.filter((t) => t.tag.startsWith('KServe v2'));
    expect(kserve.map((t) => t.tag)).toEqual(['KServe v2 inference protocol', 'KServe v2 shared memory']);
    expect(kserve.every((t) => !t.open)).toBe(true);
    expect(tags.filter((t) => !t.tag.startsWith('KServe v2') && t.tag !== 'health').every((t) => t.open)).toBe(true);
    expect(tags.findIndex((t) => t.tag.startsWith('KServe v2'))).toBeGreaterThan(0);
    // A click opens a collapsed tag, as any other.
    await page.locator('.opblock-tag[data-tag="KServe v2 inference protocol"]').click();
    await expect.poll(() => page.locator('.opblock-tag-section.is-open .opblock-tag[data-tag="KServe v2 inference protocol"]').count()).toBe(1);
  });

  it("shows the project's title and version, not serve-fn's", async () => {
    const page = await browser.newPage();
    await page.goto(`${cli.base}/docs`);
    const title = page.locator('.info .title');
    await title.waitFor({ timeout: 20_000 });
    expect(await title.innerText()).toMatch(/^Speech demo\s*2\.1\.0/);
    expect(await page.title()).toBe('Speech demo - Swagger UI');
  });

  it('describes each response status, with an example code that answers it', async () => {
    const page = await browser.newPage();
    await page.goto(`${cli.base}/docs`);
    const op = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: '/prosody' }) });
    await op.locator('.opblock-summary').click();
    const rows = op.locator('.responses-wrapper tr.response');
    await rows.first().waitFor({ timeout: 20_000 });
    const byStatus = Object.fromEntries(
      await Promise.all((await rows.all()).map(async (row) => [(await row.locator('.response-col_status').innerText()).trim(), await row.locator('.response-col_description').innerText()])),
    );
    expect(Object.keys(byStatus)).toEqual(['200', '422', '500', '503']);
    expect(byStatus['200']).toContain('Successful Response');
    expect(byStatus['422']).toContain('Validation Error');
    expect(byStatus['503']).toContain('Service Unavailable: the queue is full');
    expect(byStatus['503']).toContain('SF_ERR_QUEUE_FULL');
    expect(byStatus['500']).toContain('SF_ERR_EXECUTION_FAILED');
    expect(Object.values(byStatus).join('\n')).not.toMatch(/Default Response|SF_ERR_MODEL_NAME_MISSING/);
  });

  it('offers no "Try it out" on a WebSocket route, which it documents as an upgrade', async () => {
    const page = await browser.newPage();
    await page.goto(`${cli.base}/docs`);
    const op = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: '/ws/transcribe' }) });
    await op.locator('.opblock-summary').click();
    await op.locator('.responses-wrapper tr.response').first().waitFor({ timeout: 20_000 });
    expect(await op.locator('.response-col_status').allInnerTexts()).toEqual(expect.arrayContaining(['101', '426']));
    expect(await op.innerText()).toContain('Switching Protocols');
    expect(await op.getByRole('button', { name: 'Try it out' }).count()).toBe(0);
    // The HTTP routes keep theirs.
    const prosody = page.locator('.opblock', { has: page.locator('.opblock-summary-path', { hasText: '/prosody' }) });
    await prosody.locator('.opblock-summary').click();
    await prosody.getByRole('button', { name: 'Try it out' }).waitFor({ timeout: 20_000 });
  });
});
