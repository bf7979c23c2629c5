// The standard attacks (test/helpers/adversary.ts) on every entry of the dispatch table, as
// test/helpers/dispatch-samples.ts names them: `isoatlas serve` of a mirror whose store has packs (so
// that every entry applies, the packs it streams from its objects included), with short send and
// keep-alive timeouts so that what is bounded in time ends quickly. An entry added to the table is
// attacked here without a test being written for it: the last test adds a throwaway entry, badly
// answered, and shows each fault found.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import type http from 'node:http';
import { connect, type Socket } from 'node:net';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { KEY_PATTERN } from '../edge/access/key-format.js';
import { createHandler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { createNodeServer } from '../edge/adapters/node-http.js';
import { SERVER_LIMIT_ENV } from '../edge/adapters/server-limits.js';
import { systemPaths } from '../edge/contract/dispatch.js';
import { packKey } from '../edge/contract/packs.js';
import { attackAll, leaks, neverReads, type Subject, type Target } from './helpers/adversary.js';
import { samples, type SampleFacts } from './helpers/dispatch-samples.js';
import { writePackedStore } from './helpers/pack-store.js';
import { readStructureMap } from './helpers/tree.js';
import { runCli } from './helpers/run.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { closeNow } from './helpers/ports.js';
import { startNginxFront, type RunningFront } from './helpers/nginx-front.js';

/** The bound for a mirror's server under 64 clients that never read whole packs. */
const RSS_BOUND_BYTES = 768 * 2 ** 20;
/** Short, so that the connections of clients that never read end soon. */
const TIMEOUTS = { sendTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000 };
const PROBE = '/api/v1/genes/PRR5';
/** Every attack on every entry runs in turn, each bounded by the server's timeouts: on a loaded
 * machine that takes longer than the suite's default time for a test. */
const ATTACK_ALL_TIMEOUT_MS = 900_000;

let work: string;
let server: RunningServer;
let subject: Subject;
let facts: SampleFacts;
/** A pack larger than the kernel can hold on the way to a client that never reads. */
let bulkPack: string;

/** More bytes than the kernel and nginx may hold between the server and a client, through nginx: on
 * each of the two connections, the receiver's and the sender's buffers grown to their largest (the
 * third figures of tcp_rmem and tcp_wmem), and a MiB for nginx's own buffers. A pack that fits there
 * may be sent whole to a client that never reads, whatever nginx does (nginx's receive buffer from
 * the server grows as it reads). */
function beyondKernelBuffers(): number {
  const largest = (name: string) => Number(readFileSync(`/proc/sys/net/ipv4/${name}`, 'utf8').trim().split(/\s+/)[2]);
  return 2 * (largest('tcp_rmem') + largest('tcp_wmem')) + 2 ** 20;
}

const targetsOf = (entries: { label: string; paths: string[] }[]): Target[] =>
  entries.flatMap((e) => e.paths.map((path) => ({ label: e.label, path })));

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-adversary-'));
  const store = join(work, 'store');
  const packed = writePackedStore(inject('fixtureTree'), store, { bulkBytes: beyondKernelBuffers() });
  bulkPack = `/${packKey(packed.bulk!.pack.sha256)}`;
  facts = {
    release: packed.release,
    manifestSha: packed.manifestSha,
    structureId: Object.keys(readStructureMap(inject('fixtureTree')))[0],
    packSha: [...packed.packs].sort((a, b) => b.pack.size - a.pack.size)[0].pack.sha256,
  };
  const keys = join(work, 'keys');
  const issued = await runCli([
    ...['keys', 'issue', '--keys-dir', keys, '--name', 'adversary', '--affiliation', 'isoatlas'],
    ...['--use', 'attacks every entry of the dispatch table'],
  ]);
  expect(issued.status, issued.stderr).toBe(0);
  const key = issued.stdout.trim();
  expect(key).toMatch(KEY_PATTERN);
  // Limits per address far above what the attacks send: what is bounded here is what they hold.
  const config = join(work, 'access.json');
  writeFileSync(config, JSON.stringify({ open: { anonymous_per_ip: { per_minute: 1_000_000_000 } } }));
  server = await startServer({
    dir: store,
    extraArgs: ['--keys-dir', keys, '--access-config', config],
    env: {
      [SERVER_LIMIT_ENV.sendTimeoutMs]: String(TIMEOUTS.sendTimeoutMs),
      [SERVER_LIMIT_ENV.keepAliveTimeoutMs]: String(TIMEOUTS.keepAliveTimeoutMs),
    },
  });
  subject = { base: server.base, pid: server.child.pid!, key, probe: PROBE, rssBoundBytes: RSS_BOUND_BYTES };
}, 300_000);

afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

describe('every entry of the dispatch table, attacked', () => {
  it(
    'answers HEAD as GET, a Range past the end 416 or not at all, a key anywhere without a 5xx or a piece of it, goes on after a client leaves, and serves another address while 64 clients from one never read, in bounded memory',
    async () => {
      const targets = targetsOf(samples(facts));
      // Every entry, the pack among the store's files.
      expect(new Set(targets.map((t) => t.label)).size).toBe(samples(facts).length);
      expect(targets.some((t) => t.path.startsWith('/packs/'))).toBe(true);
      expect(await attackAll(subject, targets)).toEqual({});
    },
    ATTACK_ALL_TIMEOUT_MS,
  );

  it('closes the connection of a client that never reads, whatever it asked for', async () => {
    expect(await neverReads(subject, targetsOf(samples(facts)))).toEqual({});
  });

  it('never writes a piece of the key to its log', () => {
    expect(server.logs().length).toBeGreaterThan(0);
    expect(leaks(server.logs(), subject.key)).toBe(false);
  });
});

describe('the nginx front over the same store, attacked', () => {
  let front: RunningFront;
  let frontSubject: Subject;
  beforeAll(async () => {
    front = await startNginxFront({
      dir: join(work, 'store'),
      serverArgs: ['--keys-dir', join(work, 'keys'), '--access-config', join(work, 'access.json')],
      env: {
        [SERVER_LIMIT_ENV.sendTimeoutMs]: String(TIMEOUTS.sendTimeoutMs),
        [SERVER_LIMIT_ENV.keepAliveTimeoutMs]: String(TIMEOUTS.keepAliveTimeoutMs),
      },
      // The store's files are the fixture's: so are their compressed copies.
      compressedDir: `${inject('fixtureTree')}.compressed`,
    });
    // nginx refuses the server's own paths (/admission, /metrics) before it reads a header, so a key
    // past the header bounds gets that refusal there, where the server alone answers 431.
    const refused = Object.values(systemPaths).filter((e) => e.front === 'refuse');
    const refusedUnread = (path: string) =>
      refused.some((e) => new URL(path, front.base).pathname === e.path) ? 404 : undefined;
    frontSubject = { ...subject, base: front.base, pid: front.server.child.pid!, refusedUnread };
  }, 300_000);
  afterAll(() => front?.stop());

  it(
    'answers every entry as the attacks want, keeps nothing a client sent for another',
    async () => {
      expect(await attackAll(frontSubject, targetsOf(samples(facts)))).toEqual({});
    },
    ATTACK_ALL_TIMEOUT_MS,
  );

  it('closes the connection of a client that never reads, whatever it asked for', async () => {
    expect(await neverReads(frontSubject, targetsOf(samples(facts)))).toEqual({});
  });

  it("spools no answer to disk for a client that never reads: the server's send waits, and its timeout cuts it", async () => {
    // The pack is larger than the kernel holds on the way, so that only nginx could take it whole.
    const pack = bulkPack;
    const socket = await new Promise<Socket>((connected) => {
      const s = connect({ host: '127.0.0.1', port: Number(new URL(front.base).port) }, () => {
        s.pause();
        s.write(`GET ${pack} HTTP/1.1\r\nHost: atlas.test\r\n\r\n`, () => connected(s));
      });
    });
    try {
      // Spooled to a temporary file, the pack would have been read whole from the server, not cut.
      await front.server.untilLogged(
        (logs) => logs.split('\n').some((l) => l.includes('"answer_cut"') && l.includes(`"path":"${pack}"`)),
        "the server's answer of the pack to nginx, cut",
      );
    } finally {
      socket.destroy();
    }
  });

  it('writes no piece of the key to its log, its error log, or the server behind it', () => {
    expect(front.frontLog().length).toBeGreaterThan(0);
    for (const log of [front.frontLog(), front.errorLog(), front.server.logs()])
      expect(leaks(log, subject.key)).toBe(false);
  });
});

describe('an entry added to the table', () => {
  let demo: http.Server;
  afterAll(() => closeNow(demo));

  it('is attacked without a test of its own: a throwaway entry that echoes the request and fails on a Range is caught', async () => {
    const real = createHandler({ origin: new LocalOrigin(inject('fixtureTree')) });
    // Answered carelessly, as a new entry might be: it echoes what the client sent and fails on a Range.
    demo = createNodeServer(
      async (request, context) => {
        if (new URL(request.url).pathname !== '/throwaway') return real(request, context);
        if (request.headers.has('range')) throw new Error('ranges were never tried');
        const echo = { query: new URL(request.url).search, authorization: request.headers.get('authorization') };
        return new Response(JSON.stringify(echo), { headers: { 'content-type': 'application/json' } });
      },
      { limits: TIMEOUTS, log: { info() {}, warn() {}, error() {} } },
    );
    await new Promise<void>((ok) => demo.listen(0, '127.0.0.1', ok));
    const base = `http://127.0.0.1:${(demo.address() as { port: number }).port}`;
    const table = [
      ...samples(facts).filter((e) => e.label !== 'store_file'),
      { label: 'throwaway', paths: ['/throwaway'] },
    ];
    const report = await attackAll(
      { ...subject, base, pid: process.pid, rssBoundBytes: Number.POSITIVE_INFINITY },
      targetsOf(table),
      ['range', 'keys'],
    );
    expect(Object.keys(report)).toEqual(['throwaway /throwaway range', 'throwaway /throwaway keys']);
    expect(report['throwaway /throwaway range'].join('\n')).toMatch(/Range bytes=\d+-: 500/);
    expect(report['throwaway /throwaway keys'].join('\n')).toMatch(
      /key in Authorization: the answer carries a piece of its secret/,
    );
  });
});
