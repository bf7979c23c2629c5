// Every line `isoatlas serve` writes is JSON with a time and a level (#31, one logger): a real server
// through start-up, answers (200, 404, a wrong key, a valid key), a reload that switches the served
// release, and a stop; `--log-level warn` keeps warnings and drops the info lines; a key sent in
// Authorization never reaches a line.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treePaths } from '../edge/contract/tree.js';
import { LOG_LEVELS } from '../edge/server/logger.js';
import { issueKey } from '../build/keys/registry.js';
import { eventually } from './helpers/wait.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { rewriteTree } from './helpers/tree.js';
import { freePort } from './helpers/ports.js';
import { appendTestLog } from './helpers/key-scan.js';
import { run, runCli } from './helpers/run.js';

const ROOT = join(__dirname, '..');
const ISO_TIME = /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/;
let dir: string;
let keysDir: string;
let key: string;

/** A hard-linked copy of the fixture tree (cheap), in which files are replaced, never written through. */
async function linkedCopy(to: string) {
  const r = await run('cp', ['-al', inject('fixtureTree'), to]);
  expect(r.status, String(r.stderr)).toBe(0);
}

/** Each line of `text` as the object it must be, failing on the first that is not JSON with a time
 * and a known level. */
function jsonLines(text: string, stream: string): Record<string, unknown>[] {
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((line) => {
      let o: Record<string, unknown>;
      try {
        o = JSON.parse(line);
      } catch {
        throw new Error(`${stream}: not a JSON line: ${line}`);
      }
      expect(o.time, `${stream}: ${line}`).toMatch(ISO_TIME);
      expect(LOG_LEVELS, `${stream}: ${line}`).toContain(o.level);
      return o;
    });
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-serve-log-'));
  keysDir = join(dir, 'keys');
  key = (await issueKey(keysDir, { name: 'Log', affiliation: 'Lab', use: 'log format tests', tier: 'standard' })).key;
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('isoatlas serve writes JSON lines only', () => {
  let server: RunningServer;
  beforeAll(async () => {
    await linkedCopy(join(dir, 'live'));
    server = await startServer({ dir: join(dir, 'live'), extraArgs: ['--keys-dir', keysDir] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('from start to stop, on stdout and stderr, with a time and a level; a key in Authorization never appears', async () => {
    expect((await fetch(`${server.api}/genes/PRR5`)).status).toBe(200);
    expect((await fetch(`${server.api}/no-such-resource`)).status).toBe(404);
    const wrong = `${key.slice(0, -4)}AAAA` === key ? `${key.slice(0, -4)}BBBB` : `${key.slice(0, -4)}AAAA`;
    expect((await fetch(`${server.api}/genes/PRR5`, { headers: { Authorization: `Bearer ${wrong}` } })).status).toBe(
      401,
    );
    expect((await fetch(`${server.api}/genes/PRR5`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(200);
    expect((await fetch(`${server.api}/genes/${key}`, { headers: { Authorization: `Bearer ${key}` } })).status).toBe(
      404,
    );

    // A reload: the served directory is swapped for a tree of another release, as a rebuild does.
    const next = join(dir, 'next');
    await linkedCopy(next);
    const release = JSON.parse(readFileSync(join(next, treePaths.release), 'utf8')) as { release: string };
    await rewriteTree(
      next,
      { [treePaths.release]: JSON.stringify({ ...release, release: 'reloaded-release' }) },
      'reloaded-release',
    );
    renameSync(join(dir, 'live'), join(dir, 'old'));
    renameSync(next, join(dir, 'live'));
    await server.untilLogged(() => server.stdout().includes('"release":"reloaded-release"'), 'the reloaded release');

    expect(await server.stop()).toBe(0);
    const out = jsonLines(server.stdout(), 'stdout');
    jsonLines(server.stderr(), 'stderr');
    expect(out.map((o) => o.event).filter((e) => e && e !== 'release')).toEqual(['listening', 'stopping', 'stopped']);
    const releases = out.filter((o) => o.event === 'release');
    expect(releases[0]).toMatchObject({ level: 'info', release: release.release, previous: null });
    expect(releases.at(-1)).toMatchObject({ level: 'info', release: 'reloaded-release' });
    const requests = out.filter((o) => o.method === 'GET');
    expect(requests.map((o) => o.status)).toEqual([200, 404, 401, 200, 404]);
    for (const r of requests)
      expect(r).toMatchObject({ level: 'info', route: expect.any(String), request_id: expect.any(String) });
    expect(requests[4].path).toBe('/api/v1/genes/isoatlas_[redacted]');
    const all = server.stdout() + server.stderr();
    expect(all).not.toContain(key);
    expect(all).not.toContain(key.slice('isoatlas_'.length + 9));
    expect(all).not.toContain(wrong);
  });
});

describe('--log-level', () => {
  it('warn: keeps the warnings (an unhealthy tree) and drops every info line (start-up, requests)', async () => {
    const live = join(dir, 'warn');
    await linkedCopy(live);
    const port = await freePort();
    const child = spawn(
      process.execPath,
      [
        join(ROOT, 'bin/isoatlas.mjs'),
        'serve',
        '--dir',
        live,
        '--port',
        String(port),
        '--keys-dir',
        keysDir,
        '--log-level',
        'warn',
      ],
      { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    child.stdout
      .setEncoding('utf8')
      .on('data', (c: string) => ((stdout += c), appendTestLog(`serve-${child.pid}.log`, c)));
    child.stderr
      .setEncoding('utf8')
      .on('data', (c: string) => ((stderr += c), appendTestLog(`serve-${child.pid}.log`, c)));
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    try {
      // No `listening` line at this level: ready once /health answers.
      const base = `http://127.0.0.1:${port}`;
      const health = await eventually(
        () =>
          fetch(`${base}/health`)
            .then((r) => r.status)
            .catch(() => 0),
        (status) => status === 200,
        'the server to answer /health',
      );
      expect(health).toBe(200);
      expect((await fetch(`${base}/api/v1/genes/PRR5`)).status).toBe(200);
      expect((await fetch(`${base}/api/v1/no-such-resource`)).status).toBe(404);
      // A warning: the manifest goes away, /health says so, and the cause is logged at warn.
      renameSync(join(live, treePaths.manifest), join(live, `${treePaths.manifest}.away`));
      await eventually(
        () => fetch(`${base}/health`).catch(() => null),
        () => stdout.includes('"event":"unhealthy"'),
        'the unhealthy event',
      ).catch(() => {});
      child.kill('SIGTERM');
      expect(await exited).toBe(0);
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
    const lines = jsonLines(stdout, 'stdout');
    jsonLines(stderr, 'stderr');
    expect(lines.length).toBeGreaterThan(0);
    expect(lines.filter((o) => o.level !== 'warn')).toEqual([]);
    expect(lines.map((o) => o.event)).toContain('unhealthy');
  }, 60_000);

  it('refuses a level it does not know, naming the choices (exit 2)', async () => {
    const r = await runCli(['serve', '--dir', inject('fixtureTree'), '--log-level', 'loud'], {
      cwd: ROOT,
      timeout: 60_000,
    });
    expect(r.status).toBe(2);
    const lines = jsonLines(r.stdout, 'stdout');
    expect(r.stderr).toBe('');
    expect(lines[0]).toMatchObject({
      level: 'error',
      msg: expect.stringContaining(
        "'--log-level <level>' argument 'loud' is invalid. Allowed choices are trace, debug, info, warn, error, fatal, silent",
      ),
    });
  });
});
