// Clients that ask a mirror's server for whole packs and never read (issue #44): the demo release is
// published into a directory store, mirrored (a mirror holds the objects, not the packs, and streams
// packs from its objects: edge/origins/store-packs.ts), and `isoatlas serve` of the mirror, with its
// default limits, gets 64 connections from one address each asking for the largest pack and reading
// nothing. Meanwhile another address asks for a gene record every quarter second. Measured: the
// server's peak resident memory, the other client's slowest answer, and how long until the server has
// closed every one of the 64 connections (its send timeout).
import http from 'node:http';
import net from 'node:net';
import { mkdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './context.js';
import type { SectionReport } from './report.js';
import { establishedFrom, rssBytes, startLocalServer } from './servers.js';
import { fmt, mib } from './stats.js';
import { publish } from '../build/publish/publish.js';
import { mirror } from '../edge/mirror/mirror.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { SERVER_LIMITS } from '../edge/adapters/server-limits.js';
import { packKey, parsePackIndex, parsePackList } from '../edge/contract/packs.js';
import { parseManifestIndex } from '../edge/contract/manifest.js';
import { POINTER_KEY, objectKey, parsePointer } from '../edge/contract/store-layout.js';

const CLIENTS = 64;
const TARGET = { rss: 768 * 2 ** 20, otherMs: 3_000 };
const ATTACKER = '127.0.0.41';
const OTHER = '127.0.0.42';

/** The largest pack of the store's current release: its sha256 and size. */
function largestPack(store: string): { sha: string; size: number } {
  const read = (key: string) => readFileSync(join(store, key));
  const pointer = parsePointer(read(POINTER_KEY).toString('utf8'));
  const index = parseManifestIndex(read(objectKey(pointer.manifest_sha256)), 'manifest.json');
  if (!index.packs) throw new Error(`${store}: the release has no packs`);
  const list = parsePackList(read(objectKey(index.packs.sha256)), 'the pack list');
  const ref = [...list.packs].sort((a, b) => b.size - a.size)[0];
  const packIndex = parsePackIndex(read(objectKey(ref.index.sha256)), 'a pack index');
  return { sha: packIndex.pack.sha256, size: packIndex.pack.size };
}

function timedGet(port: number, path: string): Promise<{ status: number | string; ms: number }> {
  const started = performance.now();
  return new Promise((done) => {
    const req = http.get({ host: '127.0.0.1', port, path, localAddress: OTHER, agent: false }, (res) => {
      res.resume();
      res.on('end', () => done({ status: res.statusCode!, ms: performance.now() - started }));
    });
    req.on('error', (err: NodeJS.ErrnoException) =>
      done({ status: err.code ?? 'error', ms: performance.now() - started }),
    );
  });
}

export async function benchPackClients(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const tmp = join(ctx.tmp, 'pack-clients');
  mkdirSync(tmp, { recursive: true });
  const upstream = join(tmp, 'upstream');
  const mirrored = join(tmp, 'mirror');
  ctx.log('  pack clients: publishing the demo into a directory store and mirroring it…');
  await publish({ dir: tree, store: new ReleaseStore(new DirectoryBackend(upstream)), progress: false });
  const source = await startLocalServer(upstream, tmp, { defaultLimits: true });
  try {
    await mirror({ from: source.base, to: mirrored, progress: false });
  } finally {
    await source.stop();
  }
  const pack = largestPack(upstream);
  const server = await startLocalServer(mirrored, tmp, { defaultLimits: true });
  const port = Number(new URL(server.base).port);
  try {
    const before = rssBytes(server.pid) ?? 0;
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(server.pid) ?? 0)), 50);
    ctx.log(`  pack clients: ${CLIENTS} clients asking for a ${fmt(mib(pack.size), 1)} MiB pack and never reading…`);
    const started = performance.now();
    const sockets = Array.from({ length: CLIENTS }, () => {
      const s = net.connect({ host: '127.0.0.1', port, localAddress: ATTACKER });
      s.on('error', () => {});
      s.pause();
      s.write(`GET /${packKey(pack.sha)} HTTP/1.1\r\nHost: atlas.test\r\n\r\n`);
      return s;
    });
    const answers: { status: number | string; ms: number }[] = [];
    // Until the server has closed them all (its send timeout), and at least a little past it.
    const until = started + SERVER_LIMITS.sendTimeoutMs + 5_000;
    let closedAfter: number | null = null;
    while (performance.now() < until || (closedAfter === null && performance.now() < until + 60_000)) {
      answers.push(await timedGet(port, '/api/v1/genes/PRR5'));
      if (closedAfter === null && performance.now() - started > 1_000 && establishedFrom(port, ATTACKER) === 0)
        closedAfter = performance.now() - started;
      await new Promise((r) => setTimeout(r, 250));
    }
    clearInterval(sampler);
    for (const s of sockets) s.destroy();
    const worst = Math.max(...answers.map((a) => a.ms));
    const failed = answers.filter((a) => a.status !== 200).length;
    return {
      id: 'pack-clients',
      title: 'Clients that never read whole packs of a mirror',
      method: `The demo published into a directory store and mirrored; \`isoatlas serve\` of the mirror with its default limits (send timeout ${SERVER_LIMITS.sendTimeoutMs / 1000} s). ${CLIENTS} connections from one address each ask for the largest pack (${fmt(mib(pack.size), 1)} MiB) and read nothing; another address asks for a gene record every 250 ms, ${fmt(answers.length)} times, until the server has closed the ${CLIENTS} connections (counted in /proc/net/tcp) and at least 5 s past the send timeout. Memory sampled every 50 ms from /proc.`,
      tables: [
        {
          headers: [
            'server RSS before',
            'peak RSS',
            "other client's slowest answer",
            'its answers not 200',
            'all 64 closed after',
          ],
          rows: [
            [
              `${fmt(mib(before))} MiB`,
              `${fmt(mib(peak))} MiB`,
              `${fmt(worst)} ms`,
              String(failed),
              closedAfter === null ? 'not within the run' : `${(closedAfter / 1000).toFixed(1)} s`,
            ],
          ],
        },
      ],
      targets: [
        {
          what: `peak RSS, ${CLIENTS} clients not reading whole packs`,
          target: '< 768 MiB',
          measured: `${fmt(mib(peak))} MiB`,
          met: peak < TARGET.rss,
        },
        {
          what: 'another client answered meanwhile',
          target: 'within 3 s, every time',
          measured: `slowest ${fmt(worst)} ms, ${failed} not 200`,
          met: worst < TARGET.otherMs && failed === 0,
        },
      ],
      notes: [],
      headline: `64 clients not reading packs: peak ${fmt(mib(peak))} MiB, other client ≤ ${fmt(worst)} ms`,
    };
  } finally {
    await server.stop();
    rmSync(tmp, { recursive: true, force: true });
  }
}
