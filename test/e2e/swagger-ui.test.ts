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
    cli = await startCli(['start', 'examples/quickstart', '--host', '127.0.0.1']);
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
});
