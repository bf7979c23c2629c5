// The nginx front counting anonymous requests itself (arrangement A; edge/server/front-count.ts): it
// answers them as the server would, header for header but RateLimit-Remaining (which nginx cannot
// know), keeps the server's admissions and 404s so that a file is answered without the server, counts
// each client per minute at the server's limit (files and passed requests in one budget) with the
// server's 429, keeps nothing for a keyed request, and never answers a new release from what it kept.
import { describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { frontRequests, type RunningFront } from './helpers/nginx-front.js';
import { frontsOfSuite } from './helpers/nginx-suite.js';
import { rawRequest as request, type RawReply } from './helpers/raw-request.js';
import { issueTestKey } from './helpers/test-key.js';
import { linkedCopy } from './helpers/linked-copy.js';
import { eventually } from './helpers/wait.js';
import { SAFE_TARGET } from '../edge/server/nginx-redaction.js';
import { generateKey } from '../edge/access/key-format.js';
import { leaks } from './helpers/adversary.js';

const tree = () => inject('fixtureTree');
const { front, temp } = frontsOfSuite();

/** Headers of one message, of who sent it, or of the minute it was sent in. */
const PER_MESSAGE = ['date', 'connection', 'keep-alive', 'server', 'ratelimit-remaining', 'ratelimit-reset'];
const comparable = (r: RawReply) =>
  Object.fromEntries(Object.entries(r.headers).filter(([k]) => !PER_MESSAGE.includes(k)));

/** A directory of the suite's own, with an access config of `perMinute` anonymous requests. */
function accessConfig(perMinute: number | null, extra: object = {}): { dir: string; args: string[] } {
  const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-counted-'));
  temp.push(dir);
  const anonymous = perMinute === null ? {} : { per_minute: perMinute };
  writeFileSync(join(dir, 'access.json'), JSON.stringify({ open: { anonymous_per_ip: anonymous }, ...extra }));
  return { dir, args: ['--access-config', join(dir, 'access.json'), '--keys-dir', join(dir, 'keys')] };
}

/** What nginx keeps (admissions and 404s), by the key each file of its cache directory names
 * (nginx-front.ts puts the directory in the front's work directory). */
function keptKeys(f: RunningFront): string[] {
  const dir = /proxy_cache_path (\S+) /.exec(f.config)![1];
  const keys: string[] = [];
  const walk = (d: string) => {
    for (const e of readdirSync(d, { withFileTypes: true })) {
      if (e.isDirectory()) walk(join(d, e.name));
      else if (e.isFile() && !e.name.startsWith('.')) {
        const key = /\nKEY: ([^\n]*)\n/.exec(readFileSync(join(d, e.name), 'latin1'));
        if (key) keys.push(key[1]);
      }
    }
  };
  walk(dir);
  return keys;
}

/** Asks for each path until nginx keeps its answer (`what`: the admission of a file, or the server's
 * answer, a 404): the server lets it once it has caught up with the state nginx read, a few seconds
 * after the front's first request. */
async function untilKept(f: RunningFront, paths: [what: 'admission' | 'answer', path: string][]) {
  await eventually(
    async () => {
      for (const [, path] of paths) await request(f.base, path);
      return keptKeys(f);
    },
    (keys) => paths.every(([what, path]) => keys.some((k) => k.startsWith(`${what} `) && k.includes(` ${path} `))),
    `nginx to keep ${paths.join('; ')}`,
    500,
  );
}

/** Waits, when less than `ms` is left of the current minute, for the next one (limits count minutes). */
async function roomInMinute(ms: number) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await new Promise((ok) => setTimeout(ok, left + 100));
}

describe('anonymous requests in A, counted by nginx', () => {
  it('answers files as the server does, keeps them, and answers them with the server stopped', async () => {
    const access = accessConfig(100_000);
    const f = await front({ dir: tree(), serverArgs: access.args });
    const map = await frontRequests(tree());
    const files = [...map.keys()].filter((_, i) => i % 1999 === 0);
    files.push('/api/v1/genes/PRR5', '/api/v1/isoforms/PRR5-201/domains/');
    for (const uri of files) {
      for (const headers of [{}, { 'Accept-Encoding': 'br;q=0.5, gzip' }] as Record<string, string>[]) {
        for (const method of ['GET', 'HEAD']) {
          const viaFront = await request(f.base, uri, { method, headers });
          const direct = await request(f.server.base, uri, { method, headers });
          expect(viaFront.status, uri).toBe(200);
          expect(viaFront.body.equals(direct.body), uri).toBe(true);
          expect(comparable(viaFront), `${method} ${uri}`).toEqual(comparable(direct));
          // nginx cannot tell how many are left; the rest of the fields are the server's.
          expect(viaFront.headers['ratelimit-remaining']).toBeUndefined();
          expect(direct.headers['ratelimit-remaining']).toMatch(/^\d+$/);
          expect(Number(viaFront.headers['ratelimit-reset'])).toBeGreaterThan(0);
        }
      }
    }
    const unknown = '/api/v1/genes/NOSUCHGENE1';
    const gene = files[0];
    await untilKept(f, [
      ['admission', gene],
      ['answer', unknown],
    ]);
    // Now that it keeps what the server lets it, a target that could hold a key is still never kept
    // (nginx would write it into its cache file) nor logged by nginx.
    const { key } = generateKey(null);
    for (const target of [`/api/v1/genes/${key}`, `/api/v1/genes/${key.slice(-43)}`])
      for (let i = 0; i < 3; i++) expect((await request(f.base, target)).status).toBe(404);
    // Nor a key pasted where the coding goes (nginx keeps answers under it too).
    for (let i = 0; i < 3; i++)
      expect((await request(f.base, gene, { headers: { 'Accept-Encoding': key } })).status).toBe(200);
    expect(keptKeys(f).filter((k) => leaks(k, key))).toEqual([]);
    expect(leaks(f.frontLog(), key)).toBe(false);
    const answers = [gene, unknown].map(async (uri) => ({ uri, direct: await request(f.server.base, uri) }));
    const before = await Promise.all(answers);
    expect(await f.server.stop()).toBe(0);
    for (const { uri, direct } of before) {
      const again = await request(f.base, uri);
      expect(again.status, uri).toBe(direct.status);
      expect(again.body.equals(direct.body), uri).toBe(true);
      expect(comparable(again), uri).toEqual(comparable(direct));
    }
    // nginx logs what it answers again, in the server's log shape.
    expect(
      await f.untilFrontLogged((log) => log.includes('"path":"/api/v1/genes/NOSUCHGENE1","status":404'), 'a kept 404'),
    ).toMatch(
      /"method":"GET","path":"\/api\/v1\/genes\/NOSUCHGENE1","status":404,"bytes":\d+,"ms":\d+,"release":"[^"]+"/,
    );
    // What it did not keep needs the server.
    expect((await request(f.base, '/api/v1/genes/NOSUCHGENE2')).status).toBe(502);
  });

  it("counts each client's requests, files and passed ones, in one budget per minute, with the server's 429", async () => {
    const access = accessConfig(6);
    const f = await front({ dir: tree(), serverArgs: access.args });
    const files = [...(await frontRequests(tree())).keys()]
      .filter((k) => k.startsWith('/api/v1/isoforms/'))
      .slice(0, 5);
    await roomInMinute(20_000);
    const a = '127.0.0.2';
    const answers: RawReply[] = [];
    for (const uri of files) answers.push(await request(f.base, uri, { from: a }));
    answers.push(await request(f.base, '/api/v1/search?query=PRR5', { from: a }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200, 200, 200, 200]);
    for (const r of answers) {
      expect(r.headers['ratelimit-limit']).toBe('6');
      expect(r.headers['ratelimit-policy']).toBe('6;w=60');
    }
    // The server counted none of them: the same client asking it directly has its whole budget.
    expect((await request(f.server.base, '/api/v1/release', { from: a })).headers['ratelimit-remaining']).toBe('5');
    // Over the limit, a file, a name and a passed request are refused as the server refuses.
    for (const uri of [files[0], '/api/v1/genes/PRR5', '/api/v1/search?query=PRR5']) {
      const refused = await request(f.base, uri, { from: a });
      expect(refused.status, uri).toBe(429);
      expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(refused.headers['cache-control']).toBe('no-store');
      const reset = refused.headers['retry-after']!;
      expect(Number(reset)).toBeGreaterThan(0);
      expect(Number(reset)).toBeLessThanOrEqual(60);
      expect(refused.headers).toMatchObject({
        'ratelimit-limit': '6',
        'ratelimit-remaining': '0',
        'ratelimit-reset': reset,
        'ratelimit-policy': '6;w=60',
      });
      // The server's own refusal of this client, once it has counted its budget away, in its words.
      let own: RawReply;
      do own = await request(f.server.base, uri, { from: a });
      while (own.status !== 429);
      const body = JSON.parse(refused.text);
      const expected = JSON.parse(own.text);
      expected.detail = expected.detail.replace(/retry in \d+ s$/, `retry in ${reset} s`);
      // nginx writes a target into an answer of its own only when it cannot hold a piece of a key.
      if (!new RegExp(`^${SAFE_TARGET}$`).test(uri)) expected.instance = '/';
      expect(body, uri).toEqual(expected);
    }
    // Another client has its own budget.
    const b = await request(f.base, files[0], { from: '127.0.0.3' });
    expect(b.status).toBe(200);
  });

  it("keeps nothing for a keyed request: its answers are the server's, and never given to anyone else", async () => {
    const access = accessConfig(100_000);
    const { key } = await issueTestKey(join(access.dir, 'keys'), 'tests of the counting front');
    const f = await front({ dir: tree(), serverArgs: access.args });
    const [uri] = [...(await frontRequests(tree())).keys()].filter((k) => k.startsWith('/api/v1/genes/'));
    const auth = { Authorization: `Bearer ${key}` };
    // Keyed first (and with the front's own header, which a client may not set), until nginx keeps
    // the anonymous answer too.
    const keyed = await request(f.base, uri, {
      headers: { ...auth, 'X-Isoatlas-Front-Counted': '100000/min; ipv6=/64' },
    });
    expect(keyed.headers['ratelimit-limit']).toBe('3000');
    const keyedAgain = await request(f.base, uri, { headers: auth });
    // Counted by the server, each of them.
    expect(Number(keyedAgain.headers['ratelimit-remaining'])).toBe(Number(keyed.headers['ratelimit-remaining']) - 1);
    await untilKept(f, [['admission', uri]]);
    for (let i = 0; i < 3; i++) {
      const withKey = await request(f.base, uri, { headers: auth });
      expect(withKey.headers['ratelimit-limit']).toBe('3000');
      expect(withKey.headers['ratelimit-remaining']).toMatch(/^\d+$/);
      const anonymous = await request(f.base, uri);
      expect(anonymous.headers['ratelimit-limit']).toBe('100000');
      expect(anonymous.headers['ratelimit-remaining']).toBeUndefined();
      expect(comparable(anonymous)).toEqual(comparable(await request(f.server.base, uri)));
    }
    expect(f.frontLog()).not.toContain(key);
  });

  it('never answers a new release from what it kept of the one before', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-release-'));
    temp.push(dir);
    const copy = join(dir, 'tree');
    linkedCopy(tree(), copy);
    const access = accessConfig(100_000);
    // The copy's files are the tree's: so are their compressed copies.
    const f = await front({ dir: copy, serverArgs: access.args, compressedDir: `${tree()}.compressed` });
    const [gene] = [...(await frontRequests(copy)).keys()].filter((k) => k.startsWith('/api/v1/genes/'));
    const unknown = '/api/v1/genes/NOSUCHGENE1';
    await untilKept(f, [
      ['admission', gene],
      ['answer', unknown],
    ]);
    const old = (await request(f.base, gene)).headers['x-isoatlas-release'];
    expect((await request(f.base, unknown)).headers['x-isoatlas-release']).toBe(old);
    // A rebuild swaps in another release: its manifest names another release (a file of its own,
    // renamed in place as the build does).
    const manifest = JSON.parse(readFileSync(join(copy, 'manifest.json'), 'utf8'));
    manifest.release = `${old}-next`;
    writeFileSync(join(copy, 'manifest.next'), JSON.stringify(manifest));
    renameSync(join(copy, 'manifest.next'), join(copy, 'manifest.json'));
    // Once the server serves it, nothing the front answers is of the release before.
    await eventually(
      () => request(f.server.base, gene),
      (r) => r.headers['x-isoatlas-release'] === manifest.release,
      'the server to serve the new release',
    );
    for (let i = 0; i < 5; i++) {
      for (const uri of [gene, unknown]) {
        const r = await request(f.base, uri);
        expect(r.headers['x-isoatlas-release'], uri).toBe(manifest.release);
      }
    }
  });
});

describe('a front written for other limits than the server counts', () => {
  it('is not believed: the server counts each request itself, says so once, and answers every file', async () => {
    const access = accessConfig(1000);
    // The config as nginx-config would write it for a limit of 999 a minute.
    const f = await front({
      dir: tree(),
      serverArgs: access.args,
      editConfig: (text) => text.replaceAll('"1000/min; ipv6=/64"', '"999/min; ipv6=/64"'),
    });
    const [uri] = [...(await frontRequests(tree())).keys()].filter((k) => k.startsWith('/api/v1/genes/'));
    const answers = [];
    for (let i = 0; i < 3; i++) answers.push(await request(f.base, uri, { from: '127.0.0.4' }));
    expect(answers.map((r) => r.status)).toEqual([200, 200, 200]);
    // Counted by the server, once each.
    expect(answers.map((r) => r.headers['ratelimit-remaining'])).toEqual(['999', '998', '997']);
    const warned = await f.server.untilLogged((log) => log.includes('front_counts_otherwise'), 'the warning');
    expect(warned.split('\n').filter((l) => l.includes('front_counts_otherwise'))).toHaveLength(1);
  });
});

describe('every generated config', () => {
  it('passes nginx -t and answers as the server: A with and without an anonymous limit, A with a day limit, B, an IPv6 prefix nginx cannot read', async () => {
    const [uri] = [...(await frontRequests(tree())).keys()].filter((k) => k.startsWith('/api/v1/genes/'));
    for (const [serverArgs, counts, remaining] of [
      [accessConfig(null).args, true, false],
      [accessConfig(100, { ipv6_prefix: 56 }).args, true, false],
      [['--access', 'key-required', ...accessConfig(100).args], false, false],
      [accessConfig(null, { open: { anonymous_per_ip: { per_minute: 500, per_day: 5000 } } }).args, false, true],
    ] as const) {
      const what = serverArgs.join(' ');
      // startNginxFront runs nginx -t before it starts nginx.
      const f = await front({ dir: tree(), serverArgs: [...serverArgs] });
      expect(f.config.includes('$isoatlas_front_counts {'), what).toBe(counts);
      const viaFront = await request(f.base, uri);
      const direct = await request(f.server.base, uri);
      expect(viaFront.status, what).toBe(direct.status);
      expect(viaFront.body.equals(direct.body), what).toBe(true);
      expect(comparable(viaFront), what).toEqual(comparable(direct));
      // Only where the server counts (B refuses before counting) is there a count left to say.
      expect(viaFront.headers['ratelimit-remaining'] !== undefined, what).toBe(remaining);
    }
  });
});
