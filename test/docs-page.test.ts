// The docs page in a real browser: Debian's chromium driven by playwright-core, against `isoatlas
// serve` on the demo tree. The page must load without console errors and without reaching any other
// host, show every endpoint of the route table, and a "try it" call must return a real record.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { chromium, type Browser } from 'playwright-core';
import { routes } from '../edge/contract/routes.js';
import { treePaths } from '../edge/contract/tree.js';
import type { ReleaseBody } from '../edge/contract/schemas.js';
import { startServer, type RunningServer } from './helpers/server.js';

const CHROMIUM = '/usr/bin/chromium';

let server: RunningServer;
let browser: Browser;

beforeAll(async () => {
  if (!existsSync(CHROMIUM))
    throw new Error(`${CHROMIUM} is missing: install Debian's chromium (apt-get install chromium); .ci/run does`);
  server = await startServer({ dir: inject('fixtureTree') });
  browser = await chromium.launch({ executablePath: CHROMIUM, args: ['--no-sandbox'] });
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.stop();
});

describe('GET /api/v1/docs in Chromium', () => {
  it('is linked from the API root', async () => {
    const root = (await (await fetch(`${server.api}/`)).json()) as ReleaseBody;
    expect(root.links.docs).toBe('/api/v1/docs');
    const r = await fetch(`${server.base}${root.links.docs}`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/html; charset=utf-8');
    expect(r.headers.get('content-security-policy')).toContain("script-src 'self'");
  });

  it('loads without console errors or requests elsewhere, shows every endpoint, and tries one for real', async () => {
    const page = await browser.newPage();
    const problems: string[] = [];
    const elsewhere: string[] = [];
    page.on('console', (m) => {
      if (m.type() === 'error') problems.push(m.text());
    });
    page.on('pageerror', (e) => problems.push(String(e)));
    page.on('response', (res) => {
      if (res.status() >= 400) problems.push(`${res.status()} ${res.url()}`);
    });
    page.on('request', (req) => {
      if (!req.url().startsWith(server.base) && !req.url().startsWith('data:')) elsewhere.push(req.url());
    });
    await page.goto(`${server.base}/api/v1/docs`, { waitUntil: 'load' });
    await page.locator('.opblock').first().waitFor({ timeout: 30_000 });

    // Every route of the contract, by its path as the page shows it.
    const shown = await page
      .locator('.opblock-summary-path')
      .evaluateAll((els) => els.map((e) => e.getAttribute('data-path') ?? e.textContent ?? ''));
    expect(shown.map((p) => p.replace(/\u200b/g, '')).sort()).toEqual(routes.map((r) => r.path).sort());

    // Try it: GET /isoforms/{transcript_id} with the document's example (a real isoform of the release).
    const block = page.locator('.opblock').filter({ has: page.locator('[data-path="/isoforms/{transcript_id}"]') });
    await block.locator('.opblock-summary').click();
    const input = block.locator('input[placeholder="transcript_id"]');
    await input.waitFor();
    const example = await input.inputValue();
    expect(example).not.toBe('');
    await block.locator('button.execute').click();
    const body = block.locator('.live-responses-table .response-col_description pre.microlight').first();
    await body.waitFor({ timeout: 30_000 });
    const text = (await body.textContent()) ?? '';
    const answered = JSON.parse(text) as { transcript_id: string };
    const file = JSON.parse(
      readFileSync(join(inject('fixtureTree'), treePaths.isoform(answered.transcript_id)), 'utf8'),
    );
    expect(answered).toEqual(file);
    expect(
      await block.locator('.live-responses-table tr.response .response-col_status').first().textContent(),
    ).toContain('200');

    // Swagger UI's own findings about the document (a red box above the endpoints), none of them.
    expect(await page.locator('.errors-wrapper').allTextContents()).toEqual([]);
    expect(problems).toEqual([]);
    expect(elsewhere).toEqual([]);
    await page.close();
  }, 120_000);
});
