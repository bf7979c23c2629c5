// The one-file server: `isoatlas bundle-server` writes isoatlas-server.mjs, which is copied into an
// empty directory (no node_modules, no checkout) and run there with Node: it serves the demo tree,
// and its mirror command loads the S3 client it carries.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { output, until } from './helpers/wait.js';
import { spawn, type ChildProcess } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treePaths } from '../edge/contract/tree.js';
import { SERVER_BUNDLE_BUDGET } from '../build/bundle/server.js';
import { run, runCli } from './helpers/run.js';

const ROOT = join(__dirname, '..');
let dir: string;
let bundle: string;
let child: ChildProcess | undefined;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-server-bundle-'));
  const built = await runCli(['bundle-server', '--out', join(dir, 'build/isoatlas-server.mjs')]);
  expect(built.status, built.stderr).toBe(0);
  // "Download": the file alone, into a directory with nothing else.
  bundle = join(dir, 'opt/isoatlas-server.mjs');
  await run('mkdir', ['-p', join(dir, 'opt')]);
  copyFileSync(join(dir, 'build/isoatlas-server.mjs'), bundle);
}, 60_000);

afterAll(() => {
  child?.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

describe('isoatlas-server.mjs', () => {
  it('is one file within its budget, alone in its directory', async () => {
    expect(readdirSync(join(dir, 'opt'))).toEqual(['isoatlas-server.mjs']);
    expect(statSync(bundle).size).toBeLessThanOrEqual(SERVER_BUNDLE_BUDGET);
    const version = await run(process.execPath, [bundle, '--version'], { cwd: join(dir, 'opt') });
    expect(version.stdout.trim()).toBe(
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    );
  });

  it('serves the demo tree with no node_modules anywhere near it', async () => {
    child = spawn(
      process.execPath,
      [bundle, 'serve', '--dir', inject('fixtureTree'), '--port', '0', '--keys-dir', join(dir, 'keys')],
      { cwd: join(dir, 'opt'), stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let out = '';
    child.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
    child.stderr!.setEncoding('utf8').on('data', (d) => (out += d));
    const listening = /"event":"listening","url":"(http:\/\/[^\s/"]+)\/api\/v1\/"/;
    const base = listening.exec(
      await until(
        [output(child.stdout!, child.stderr!)],
        () => out,
        (text) => listening.test(text),
        'the bundle to listen',
      ),
    )![1];
    const gene = await fetch(`${base}/api/v1/genes/PRR5`);
    expect(gene.status).toBe(200);
    expect(
      Buffer.from(await gene.arrayBuffer()).equals(
        readFileSync(join(inject('fixtureTree'), treePaths.gene('ENSG00000186654'))),
      ),
    ).toBe(true);
    expect((await (await fetch(`${base}/health`)).json()).status).toBe('ok');
    expect((await fetch(`${base}/api/v1/search?query=ERK2`)).status).toBe(200);
    // The bundle carries the logger: every line it wrote is JSON with a time and a level.
    await until(
      [output(child.stdout!, child.stderr!)],
      () => out,
      (text) => (text.match(/"method":"GET"/g) ?? []).length >= 3,
      'the log lines of the three requests',
    ).catch(() => {});
    const lines = out
      .split('\n')
      .filter(Boolean)
      .map((l) => JSON.parse(l) as { time?: string; level?: string; method?: string });
    // The served release, listening, and the three requests above.
    expect(lines.filter((l) => l.method === 'GET')).toHaveLength(3);
    expect(lines.length).toBeGreaterThanOrEqual(5);
    for (const l of lines)
      expect(l).toMatchObject({ time: expect.stringMatching(/^\d{4}-\d\d-\d\dT/), level: expect.any(String) });
  }, 60_000);

  it('on a port in use says which and what to do, exit 2 (usage)', async () => {
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(0, '127.0.0.1', r));
    const port = (holder.address() as { port: number }).port;
    try {
      const r = await run(
        process.execPath,
        [bundle, 'serve', '--dir', inject('fixtureTree'), '--port', String(port), '--keys-dir', join(dir, 'keys')],
        { cwd: join(dir, 'opt'), timeout: 60_000 },
      );
      expect(r.stderr).toBe('');
      const last = JSON.parse(r.stdout.trim().split('\n').at(-1)!);
      expect(last).toMatchObject({
        level: 'error',
        exit: 2,
        msg: `isoatlas-server: 127.0.0.1:${port} is already in use: choose another --port, or stop what listens there (run with --help for usage)`,
      });
      expect(r.status).toBe(2);
    } finally {
      await new Promise((r) => holder.close(r));
    }
  }, 60_000);

  it('mirrors from S3 with the client it carries: an unreachable endpoint is explained, exit 4', async () => {
    const server = createServer();
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    const port = (server.address() as { port: number }).port;
    await new Promise((r) => server.close(r));
    const r = await run(
      process.execPath,
      [
        bundle,
        'mirror',
        '--from',
        's3://atlas/',
        '--endpoint',
        `http://127.0.0.1:${port}`,
        '--to',
        join(dir, 'mirror'),
      ],
      {
        cwd: join(dir, 'opt'),
        env: { ...process.env, AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x' },
      },
    );
    expect(r.status, r.stderr).toBe(4);
    expect(r.stderr).toContain('isoatlas-server: cannot read the source');
    expect(r.stderr).not.toMatch(/Cannot find (module|package)/);
  }, 60_000);
});
