// The local server's health endpoint and its log of served releases, black box: `isoatlas serve` on a
// copy of the demo tree, with keys required, so a health check that were keyed or counted would fail.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash } from 'node:crypto';
import { cpSync, mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from './helpers/server.js';

let dir: string;
let server: RunningServer;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-health-'));
  cpSync(inject('demoTree'), join(dir, 'tree'), { recursive: true });
  server = await startServer({ dir: join(dir, 'tree'), extraArgs: ['--access', 'key-required', '--keys-dir', join(dir, 'keys')] });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(dir, { recursive: true, force: true });
});

describe('GET /health', () => {
  it('names the release and its manifest hash, without a key, as often as asked (never counted)', async () => {
    const manifest = createHash('sha256').update(readFileSync(join(dir, 'tree/manifest.json'))).digest('hex');
    for (let i = 0; i < 80; i++) {
      const r = await fetch(`${server.base}/health`);
      expect(r.status).toBe(200);
      expect(r.headers.get('cache-control')).toBe('no-store');
      expect(await r.json()).toEqual({ status: 'ok', release: '2026.11-chr22-demo', manifest_sha256: manifest, mirror: null });
    }
    // The API itself still wants a key.
    expect((await fetch(`${server.api}/`)).status).toBe(401);
  });

  it('answers 503 while no whole release can be read, and 200 again once it can', async () => {
    const manifest = join(dir, 'tree/manifest.json');
    renameSync(manifest, `${manifest}.away`);
    try {
      const r = await fetch(`${server.base}/health`);
      expect(r.status).toBe(503);
      expect(r.headers.get('retry-after')).toBe('5');
      expect(await r.json()).toMatchObject({ status: 'unavailable' });
    } finally {
      renameSync(`${manifest}.away`, manifest);
    }
    expect((await fetch(`${server.base}/health`)).status).toBe(200);
  });

  it('logs the served release at start as a JSON line', () => {
    const line = server.logs().split('\n').find((l) => l.includes('"event":"release"'))!;
    expect(JSON.parse(line)).toMatchObject({ event: 'release', release: '2026.11-chr22-demo', previous: null });
  });
});
