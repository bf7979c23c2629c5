// The one-file server: `isoatlas bundle-server` writes isoatlas-server.mjs, which is copied into an
// empty directory (no node_modules, no checkout) and run there with Node: it serves the demo tree,
// and every job it carries does real work there: `mirror` of a store published to S3 into an empty
// directory, `serve` of that mirror, `mirror` from that server into a second directory and a
// re-sync of it, `nginx-config` of the mirror (which nginx accepts), no sync leaving its scratch; and
// each command the file offers (read from its --help) killed in the middle of its work, then run again.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { eventually, output, until } from './helpers/wait.js';
import http from 'node:http';
import { spawn, type ChildProcess } from 'node:child_process';
import { createHash } from 'node:crypto';
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import { createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { treePaths } from '../edge/contract/tree.js';
import { parseManifestIndex } from '../edge/contract/manifest.js';
import { packKey, parsePackList } from '../edge/contract/packs.js';
import { POINTER_KEY, objectKey, parsePointer } from '../edge/contract/store-layout.js';
import { GetObjectCommand } from '@aws-sdk/client-s3';
import { standaloneNginx } from '../edge/server/nginx-config.js';
import { SERVER_BUNDLE_BUDGET } from '../build/bundle/server.js';
import { notPortable } from '../build/bundle/portable.js';
import { publish, s3Client } from '../build/publish/publish.js';
import { run, runCli } from './helpers/run.js';
import { startS3rver, type S3rverProcess } from './helpers/s3rver.js';
import { readManifest } from './helpers/tree.js';
import { NGINX } from './helpers/nginx-front.js';
import { freePort } from './helpers/ports.js';

const ROOT = join(__dirname, '..');
let dir: string;
let bundle: string;
/** Where the file runs: its own directory, nothing else in it. */
let opt: string;
const children: ChildProcess[] = [];

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-server-bundle-'));
  const built = await runCli(['bundle-server', '--out', join(dir, 'build/isoatlas-server.mjs')]);
  expect(built.status, built.stderr).toBe(0);
  // "Download": the file alone, into a directory with nothing else.
  opt = join(dir, 'opt');
  bundle = join(opt, 'isoatlas-server.mjs');
  await run('mkdir', ['-p', opt]);
  copyFileSync(join(dir, 'build/isoatlas-server.mjs'), bundle);
}, 60_000);

afterAll(() => {
  for (const c of children) c.kill('SIGTERM');
  rmSync(dir, { recursive: true, force: true });
});

/** `node isoatlas-server.mjs serve --dir <dir>` from its directory; resolves once it listens. */
async function serveBundle(served: string): Promise<{ base: string; child: ChildProcess; out: () => string }> {
  const child = spawn(
    process.execPath,
    [bundle, 'serve', '--dir', served, '--port', '0', '--keys-dir', join(dir, 'keys')],
    { cwd: opt, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  children.push(child);
  let out = '';
  child.stdout!.setEncoding('utf8').on('data', (d) => (out += d));
  child.stderr!.setEncoding('utf8').on('data', (d) => (out += d));
  const listening = /"event":"listening","url":"(http:\/\/[^\s/"]+)\/api\/v1\/"/;
  const text = await until(
    [output(child.stdout!, child.stderr!)],
    () => out,
    (t) => listening.test(t),
    'the bundle to listen',
  );
  return { base: listening.exec(text)![1], child, out: () => out };
}

describe('isoatlas-server.mjs', () => {
  it('is one file within its budget, alone in its directory', async () => {
    expect(readdirSync(opt)).toEqual(['isoatlas-server.mjs']);
    expect(statSync(bundle).size).toBeLessThanOrEqual(SERVER_BUNDLE_BUDGET);
    const version = await run(process.execPath, [bundle, '--version'], { cwd: opt });
    expect(version.stdout.trim()).toBe(
      (JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }).version,
    );
  });

  it('serves the demo tree with no node_modules anywhere near it', async () => {
    const { base, child, out } = await serveBundle(inject('fixtureTree'));
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
      out,
      (text) => (text.match(/"method":"GET"/g) ?? []).length >= 3,
      'the log lines of the three requests',
    ).catch(() => {});
    const lines = out()
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
        { cwd: opt, timeout: 60_000 },
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
        cwd: opt,
        env: { ...process.env, AWS_ACCESS_KEY_ID: 'x', AWS_SECRET_ACCESS_KEY: 'x' },
      },
    );
    expect(r.status, r.stderr).toBe(4);
    expect(r.stderr).toContain('isoatlas-server: cannot read the source');
    expect(r.stderr).not.toMatch(/Cannot find (module|package)/);
  }, 60_000);
});

describe('isoatlas-server.mjs: every job it carries, on a real store', () => {
  const tree = () => inject('fixtureTree');
  let s3: S3rverProcess | undefined;
  const s3env = () => ({ ...process.env, AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' });
  /** The release the fixture tree is, as published. */
  let release: string;
  let served: { base: string; child: ChildProcess; out: () => string } | undefined;
  const first = () => join(dir, 'mirror-from-s3');
  const second = () => join(dir, 'mirror-from-http');

  beforeAll(async () => {
    s3 = await startS3rver(['atlas']);
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    // Small packs: the sync reads several, by ranges.
    const published = await publish({
      dir: tree(),
      bucket: 'atlas',
      prefix: 'pre/',
      s3: s3Client({ endpoint: s3.endpoint, region: 'us-east-1' }),
      progress: false,
      packTargetBytes: 256 * 1024,
    });
    release = published.release;
    expect(published.packs).toBeGreaterThan(1);
  }, 300_000);

  afterAll(async () => {
    await s3?.stop();
  });

  /** `node isoatlas-server.mjs mirror …` from its directory, its log lines as JSON; what the
   * summary line says. */
  async function mirrorWithBundle(args: string[], env?: NodeJS.ProcessEnv) {
    const r = await run(process.execPath, [bundle, 'mirror', ...args, '--log-format', 'json'], { cwd: opt, env });
    const messages = r.stderr
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => (JSON.parse(l) as { msg: string }).msg);
    const summary = messages.find((m) => m.startsWith('mirrored release')) ?? '';
    const count = (what: RegExp) => Number(what.exec(summary)?.[1].replaceAll(',', '') ?? Number.NaN);
    return {
      ...r,
      summary,
      fetched: count(/(\d[\d,]*) objects fetched/),
      downloadedMB: Number(/([\d.]+) MB downloaded/.exec(summary)?.[1] ?? Number.NaN),
    };
  }

  /** The pointer the source store holds. */
  async function sourcePointer() {
    const got = await s3Client({ endpoint: s3!.endpoint, region: 'us-east-1' }).send(
      new GetObjectCommand({ Bucket: 'atlas', Key: `pre/${POINTER_KEY}` }),
    );
    return parsePointer(await got.Body!.transformToString());
  }

  /** Every file of the fixture release and the manifest the source publishes for it in the mirror,
   * with the right bytes; the mirror's pointer the source's; no sync's scratch left. */
  async function expectWhole(mirror: string): Promise<void> {
    const pointer = await sourcePointer();
    expect(pointer.release).toBe(release);
    expect(parsePointer(readFileSync(join(mirror, POINTER_KEY), 'utf8'))).toEqual(pointer);
    const { index, entries } = readManifest(tree());
    const listed = [...index.shards, ...entries, { path: 'manifest', sha256: pointer.manifest_sha256 }];
    const wrong = listed.filter((e) => {
      const file = join(mirror, objectKey(e.sha256));
      return !existsSync(file) || createHash('sha256').update(readFileSync(file)).digest('hex') !== e.sha256;
    });
    expect(wrong.map((e) => e.path)).toEqual([]);
    expectNoScratch(mirror);
  }

  const expectNoScratch = (mirror: string) =>
    expect(readdirSync(mirror).filter((n) => n.startsWith('.sync-scratch-'))).toEqual([]);

  it('mirrors a store published to S3 into an empty directory, whole', async () => {
    const r = await mirrorWithBundle(
      ['--from', 's3://atlas/pre', '--endpoint', s3!.endpoint, '--to', first()],
      s3env(),
    );
    expect(r.status, r.stderr).toBe(0);
    expect(r.summary).toContain(`mirrored release ${release}`);
    expect(r.fetched).toBeGreaterThan(readManifest(tree()).entries.length / 2);
    await expectWhole(first());
  }, 300_000);

  it('serves that mirror: its answers are the source release’s files', async () => {
    served = await serveBundle(first());
    const pairs: [string, string][] = [
      ['/api/v1/genes/PRR5', treePaths.gene('ENSG00000186654')],
      ['/api/v1/release', treePaths.release],
      ['/api/v1/openapi.json', treePaths.openapi],
    ];
    for (const [url, path] of pairs) {
      const res = await fetch(`${served.base}${url}`);
      expect(res.status, url).toBe(200);
      expect(Buffer.from(await res.arrayBuffer()).equals(readFileSync(join(tree(), path))), url).toBe(true);
    }
    expect((await fetch(`${served.base}/api/v1/search?query=ERK2`)).status).toBe(200);
  }, 60_000);

  it('mirrors from that server (HTTP) into a second directory, whole; a re-sync reads little', async () => {
    expect(served, 'the mirror is served (test above)').toBeDefined();
    const from = ['--from', served!.base, '--to', second()];
    const r = await mirrorWithBundle(from);
    expect(r.status, r.stderr).toBe(0);
    await expectWhole(second());
    const again = await mirrorWithBundle(from);
    expect(again.status, again.stderr).toBe(0);
    expect(again.fetched).toBe(0);
    // The pointer and history, and nothing of the release: a thousandth of the first sync at most.
    expect(again.downloadedMB).toBeLessThanOrEqual(r.downloadedMB / 1000);
    await expectWhole(second());
  }, 300_000);

  it('writes the nginx front of the mirror, which nginx accepts', async () => {
    expect(served, 'the mirror is served (test above)').toBeDefined();
    const work = join(dir, 'nginx');
    const config = join(work, 'isoatlas.conf');
    mkdirSync(work);
    const r = await run(
      process.execPath,
      [
        bundle,
        'nginx-config',
        '--dir',
        first(),
        '--upstream',
        new URL(served!.base).host,
        '--listen',
        `127.0.0.1:${await freePort()}`,
        '--access-log',
        join(work, 'front.log'),
        '--out',
        config,
      ],
      { cwd: opt },
    );
    expect(r.status, r.stderr).toBe(0);
    expect(readFileSync(config, 'utf8')).toContain(`server ${new URL(served!.base).host}`);
    const check = await run(NGINX, [...standaloneNginx(work, config).args, '-t']);
    expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    expectNoScratch(first());
  }, 120_000);
  /** Runs `node isoatlas-server.mjs <args>` from its directory, kills it (SIGKILL) once `begun`
   * says it is in the middle of its work, and resolves when it is gone. */
  async function killedMidway(args: string[], begun: () => boolean, env?: NodeJS.ProcessEnv): Promise<void> {
    const child = spawn(process.execPath, [bundle, ...args], { cwd: opt, env, stdio: 'ignore' });
    children.push(child);
    const gone = new Promise<void>((done) => child.once('exit', () => done()));
    await eventually(
      async () => begun() || child.exitCode !== null,
      (ok) => ok,
      `${args[0]} to begin its work`,
      5,
    );
    expect(child.exitCode, `${args[0]} ended before it could be killed in the middle`).toBeNull();
    child.kill('SIGKILL');
    await gone;
  }

  /** For each command the file offers, a kill in the middle of its work and what must hold after:
   * a command added to the file without an entry here fails the test below. */
  const killedCommands: Record<string, () => Promise<void>> = {
    async mirror() {
      const to = join(dir, 'mirror-killed');
      const args = ['mirror', '--from', 's3://atlas/pre', '--endpoint', s3!.endpoint, '--to', to];
      // Killed once its scratch exists: it has read the source and is fetching.
      await killedMidway(
        args,
        () => existsSync(to) && readdirSync(to).some((n) => n.startsWith('.sync-scratch-')),
        s3env(),
      );
      const again = await mirrorWithBundle(args.slice(1), s3env());
      expect(again.status, again.stderr).toBe(0);
      // Whole, and the killed run's scratch gone with it.
      await expectWhole(to);
    },
    async serve() {
      const before = readdirSync(first()).sort();
      const killed = await serveBundle(first());
      const read = (sha: string) => readFileSync(join(first(), objectKey(sha)));
      const pointer = parsePointer(readFileSync(join(first(), POINTER_KEY), 'utf8'));
      const packs = parseManifestIndex(read(pointer.manifest_sha256), 'manifest.json').packs!;
      const pack = parsePackList(read(packs.sha256), 'the pack list').packs[0];
      // Killed while it streams a pack.
      const cut = new Promise<string>((done) => {
        http
          .get(`${killed.base}/${packKey(pack.sha256)}`, (res) => {
            res.once('data', () => killed.child.kill('SIGKILL'));
            res.on('error', () => {});
            res.on('close', () => done(res.complete ? 'whole' : 'cut'));
            res.resume();
          })
          .on('error', () => done('refused'));
      });
      expect(['cut', 'whole']).toContain(await cut);
      const again = await serveBundle(first());
      const gene = await fetch(`${again.base}/api/v1/genes/PRR5`);
      expect(gene.status).toBe(200);
      expect(readdirSync(first()).sort()).toEqual(before);
      again.child.kill('SIGTERM');
    },
    async 'nginx-config'() {
      const work = join(dir, 'nginx-killed');
      mkdirSync(work);
      const config = join(work, 'isoatlas.conf');
      const compressed = join(work, 'compressed');
      const args = [
        ...['nginx-config', '--dir', first(), '--upstream', '127.0.0.1:9', '--listen', `127.0.0.1:${await freePort()}`],
        ...['--access-log', join(work, 'front.log'), '--compressed-dir', compressed, '--out', config],
      ];
      // Killed once it writes the compressed copies.
      await killedMidway(args, () => existsSync(compressed));
      const again = await run(process.execPath, [bundle, ...args], { cwd: opt });
      expect(again.status, again.stderr).toBe(0);
      const check = await run(NGINX, [...standaloneNginx(work, config).args, '-t']);
      expect(check.status, `${check.stdout}${check.stderr}`).toBe(0);
    },
  };

  it('every command it offers, killed in the middle of its work, runs again to a whole result', async () => {
    expect(served, 'the mirror is served (test above)').toBeDefined();
    const help = await run(process.execPath, [bundle, '--help'], { cwd: opt });
    const offered = help.stdout
      .split(/\nCommands:\n/)[1]
      .split('\n')
      .map((l) => /^\s{2}(\S+)/.exec(l)?.[1])
      .filter((c): c is string => c !== undefined && c !== 'help');
    expect(offered.sort()).toEqual(Object.keys(killedCommands).sort());
    for (const command of offered) await killedCommands[command]();
  }, 300_000);
});

describe('the check that keeps the one-file server portable', () => {
  it('names a native module, its addon loader, and a module reading __filename, each with what imports it; passes what the server carries', () => {
    const modules = join(ROOT, 'node_modules');
    const sqlite = join(modules, 'better-sqlite3/lib/database.js');
    const bindings = join(modules, 'bindings/bindings.js');
    const scratch = join(ROOT, 'edge/mirror/sync-scratch.ts');
    const imports = (...paths: string[]) => ({ imports: paths.map((path) => ({ path })) });
    const problems = notPortable(
      {
        [scratch]: imports(sqlite, join(modules, 'pino/lib/transport.js')),
        [sqlite]: imports(bindings),
        [bindings]: imports(),
        [join(modules, 'pino/lib/transport.js')]: imports(),
        [join(modules, 'commander/lib/command.js')]: imports(),
      },
      ROOT,
    );
    expect(problems).toEqual([
      `better-sqlite3 is a native module (it has a binding.gyp), imported by ${scratch}`,
      `bindings loads a compiled addon from beside itself, imported by ${sqlite}`,
      `${bindings} finds files by __dirname or __filename, which an ES module does not have, imported by ${sqlite}`,
    ]);
  });
});
