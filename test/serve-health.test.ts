// The local server's health endpoint and its log of served releases, black box: `isoatlas serve` on a
// copy of the demo tree, with keys required, so a health check that were keyed or counted would fail.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash } from 'node:crypto';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { runCli } from './helpers/run.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { releaseOf } from './helpers/tree.js';
import { eventually } from './helpers/wait.js';
import { linkedCopy } from './helpers/linked-copy.js';

let dir: string;
let server: RunningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-health-'));
  // Hard links: the tests move the manifest away and back, never write into a file.
  linkedCopy(inject('fixtureTree'), join(dir, 'tree'));
  server = await startServer({
    dir: join(dir, 'tree'),
    extraArgs: ['--access', 'key-required', '--keys-dir', join(dir, 'keys'), '--metrics'],
  });
});

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /health', () => {
  it('names the release and its manifest hash, without a key, as often as asked (never counted)', async () => {
    const manifest = createHash('sha256')
      .update(readFileSync(join(dir, 'tree/manifest.json')))
      .digest('hex');
    for (let i = 0; i < 80; i++) {
      const r = await fetch(`${server.base}/health`);
      expect(r.status).toBe(200);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(await r.json()).toEqual({
        status: 'ok',
        release: releaseOf(join(dir, 'tree')),
        manifest_sha256: manifest,
        mirror: null,
      });
    }
    // The API itself still wants a key.
    expect((await fetch(`${server.api}/`)).status).toBe(401);
  });

  it('answers 503 while no whole release can be read, and 200 again once it can', async () => {
    const manifest = join(dir, 'tree/manifest.json');
    renameSync(manifest, `${manifest}.away`);
    try {
      // The server looks at the tree's manifest on its own schedule: until then, it still answers from
      // what it read.
      const r = await eventually(
        () => fetch(`${server.base}/health`),
        (answer) => answer.status !== 200,
        'the server to notice the manifest is gone',
      );
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('5');
      // What is wrong in words, with no path of the server's machine; the log has the cause.
      const text = await r.text();
      expect(JSON.parse(text)).toEqual({ status: 'unavailable', detail: 'the tree has no readable manifest.json' });
      expect(text).not.toContain(dir);
      expect(text).not.toContain(tmpdir());
      for (let i = 0; i < 3; i++) expect((await fetch(`${server.base}/health`)).status).toBe(503);
      const unhealthy = () =>
        server
          .logs()
          .split('\n')
          .filter((l) => l.includes('"event":"unhealthy"'));
      await server.untilLogged((text) => text.includes('"event":"unhealthy"'), 'the unhealthy event').catch(() => {});
      const logged = unhealthy();
      expect(logged).toHaveLength(1); // once while the cause stays the same, however often the probe asks
      expect(JSON.parse(logged[0])).toMatchObject({
        detail: 'the tree has no readable manifest.json',
        cause: expect.stringContaining(join(dir, 'tree')),
      });
    } finally {
      renameSync(`${manifest}.away`, manifest);
    }
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
  });

  it('a second server on the same port says which port is in use and what to do, exit 2 (usage)', async () => {
    const port = new URL(server.base).port;
    const r = await runCli(
      ['serve', '--dir', join(dir, 'tree'), '--port', port, '--host', '127.0.0.1', '--keys-dir', join(dir, 'keys')],
      { timeout: 60_000 },
    );
    // Like every line serve writes, a JSON line on standard output; the last one.
    expect(r.stderr).toBe('');
    const last = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
    expect(last).toMatchObject({
      level: 'error',
      exit: 2,
      msg: `isoatlas: 127.0.0.1:${port} is already in use: choose another --port, or stop what listens there (run with --help for usage)`,
    });
    expect(r.status).toBe(2);
  });

  it('logs the served release at start as a JSON line', () => {
    const line = server
      .logs()
      .split('\n')
      .find((l) => l.includes('"event":"release"'))!;
    expect(JSON.parse(line)).toMatchObject({ event: 'release', release: releaseOf(join(dir, 'tree')), previous: null });
  });
});

describe('GET /metrics (--metrics)', () => {
  it('counts requests by route and status, times them, and reports the caches', async () => {
    await fetch(`${server.api}/genes/PRR5`); // 401: keys are required
    const issued = await runCli([
      'keys',
      'issue',
      '--keys-dir',
      join(dir, 'keys'),
      '--name',
      'metrics test',
      '--affiliation',
      'isoatlas',
      '--use',
      'reads one gene',
    ]);
    expect(issued.status, issued.stderr).toBe(0);
    const key = issued.stdout.trim().split('\n').pop()!;
    // The server re-reads the key registry when it changes, on its own schedule.
    const { status: ok } = await eventually(
      () => fetch(`${server.api}/genes/PRR5`, { headers: { Authorization: `Bearer ${key}` } }),
      (answer) => answer.status === 200,
      'the issued key to be accepted',
    );
    expect(ok).toBe(200);
    await fetch(`${server.base}/health`);
    const r = await fetch(`${server.base}/metrics`);
    expect(r.status).toBe(200);
    expect(r.headers.get('content-type')).toBe('text/plain; version=0.0.4; charset=utf-8');
    const text = await r.text();
    expect(text).toMatch(/^isoatlas_requests_total\{route="gene",status="401"\} [1-9]\d*$/m);
    expect(text).toMatch(/^isoatlas_requests_total\{route="gene",status="200"\} 1$/m);
    expect(text).toMatch(/^isoatlas_requests_total\{route="health",status="200"\} ([89]\d|\d{3,})$/m); // the 80+ health checks above
    const count = Number(/^isoatlas_request_duration_seconds_count (\d+)$/m.exec(text)![1]);
    const inf = Number(/^isoatlas_request_duration_seconds_bucket\{le="\+Inf"\} (\d+)$/m.exec(text)![1]);
    expect(inf).toBe(count);
    expect(count).toBeGreaterThan(80);
    expect(text).toMatch(/^isoatlas_cache_hits_total \d+$/m);
    expect(text).toMatch(/^isoatlas_cache_misses_total [1-9]\d*$/m);
  });
});
