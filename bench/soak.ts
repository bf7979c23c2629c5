// Soak (issue #8): the local server at a steady rate on loopback for --soak-minutes with a mixed
// request profile. Targets: zero errors, RSS growth under 10% from minute 1 to the end, p99 stable.
import type { BenchContext } from './context.js';
import { load, type LoadResult } from './load.js';
import type { SectionReport } from './report.js';
import { pickSamples, typo } from './samples.js';
import { rssBytes, startLocalServer } from './servers.js';
import { loadavg } from 'node:os';
import { fmt, mib } from './stats.js';

/** Steady and well below saturation: the server answers about 2,000 requests/s of this mix on this
 * 2-core machine when it is otherwise idle, and stays below saturation even when other work halves that. */
const RATE = 300;
const CONNECTIONS = 10;
/** Answers the profile asks for on purpose (redirects, unknown ids, bad parameters): not errors. */
const EXPECTED = new Set(['200', '307', '400', '404']);
/** Requests per connection before the generator reconnects: below the server's 1,000 per connection
 * (SERVER_LIMITS). When the server ends a connection itself, autocannon sends one more request on it,
 * keeps that request queued after reconnecting, and times every later answer on the connection from
 * the request before it: latencies of hundreds of ms on an idle server (p50 405 ms, p99 946 ms in the
 * run of 2026-11-22 19:36, against 1 ms and 34 ms with no limit reached). Reconnecting first avoids it. */
const RECONNECT_EVERY = 500;

export async function benchSoak(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const s = pickSamples(tree);
  const api = '/api/v1';
  const profile = [
    `${api}/genes/${s.symbol.toLowerCase()}`,
    `${api}/genes/${s.geneIdVersioned}`,
    `${api}/isoforms/${s.transcriptName}`,
    `${api}/isoforms/${s.transcriptId}`,
    `${api}/genes/${s.symbol}/isoforms?limit=10&offset=5`,
    `${api}/genes/${s.symbol}/isoforms`,
    `${api}/isoforms/${s.transcriptName}/domains`,
    `${api}/isoforms/${s.transcriptName}/neoantigens?limit=5`,
    `${api}/isoforms/${s.structureTranscriptId}/structure`,
    `${api}/search?query=${encodeURIComponent(s.symbol)}`,
    `${api}/search?query=${encodeURIComponent(typo(s.symbol))}&limit=5`,
    `${api}/release`,
    `${api}/genes/NOSUCHGENE1`,
    `${api}/isoforms/${s.transcriptName}/neoantigens?limit=500`,
  ];
  // --quick: 30 s in three chunks; otherwise one chunk per minute.
  const chunkSeconds = ctx.opts.quick ? 10 : 60;
  const chunks = ctx.opts.quick ? 3 : ctx.opts.soakMinutes;

  const server = await startLocalServer(tree, ctx.tmp);
  const rss: { t: number; bytes: number }[] = [];
  const started = Date.now();
  const sampler = setInterval(() => {
    const bytes = rssBytes(server.pid);
    if (bytes !== null) rss.push({ t: (Date.now() - started) / 1000, bytes });
  }, 5_000);
  const minutes: (LoadResult & { rssEnd: number; loadAvg: number })[] = [];
  try {
    // Loads the alias shards and search index and lets the JIT settle; not counted.
    await load({
      base: server.base,
      paths: profile,
      connections: CONNECTIONS,
      seconds: 5,
      rate: RATE,
      reconnectEvery: RECONNECT_EVERY,
    });
    for (let i = 0; i < chunks; i++) {
      const r = await load({
        base: server.base,
        paths: profile,
        connections: CONNECTIONS,
        seconds: chunkSeconds,
        rate: RATE,
        reconnectEvery: RECONNECT_EVERY,
      });
      const rssEnd = rssBytes(server.pid);
      if (rssEnd === null) throw new Error('the local server died during the soak run');
      minutes.push({ ...r, rssEnd, loadAvg: loadavg()[0] });
      const bad = Object.entries(r.status)
        .filter(([c]) => !EXPECTED.has(c))
        .reduce((n, [, k]) => n + k, 0);
      ctx.log(
        `  soak ${i + 1}/${chunks}: ${fmt(r.requests)} requests (${fmt(r.rps)}/s), p99 ${r.p99Ms} ms, errors ${bad + r.socketErrors}, RSS ${mib(rssEnd).toFixed(0)} MiB`,
      );
    }
  } finally {
    clearInterval(sampler);
    await server.stop();
  }

  const total = minutes.reduce((n, m) => n + m.requests, 0);
  const status: Record<string, number> = {};
  for (const m of minutes) for (const [c, k] of Object.entries(m.status)) status[c] = (status[c] ?? 0) + k;
  const errors = Object.entries(status)
    .filter(([c]) => !EXPECTED.has(c))
    .reduce((n, [, k]) => n + k, 0);
  const socketErrors = minutes.reduce((n, m) => n + m.socketErrors, 0);
  const rssFirst = minutes[0].rssEnd;
  const rssLast = minutes.at(-1)!.rssEnd;
  const growth = (100 * (rssLast - rssFirst)) / rssFirst;
  const p99s = minutes.map((m) => m.p99Ms);
  const laterP99 = Math.max(...p99s.slice(1));
  // Stable: no later chunk's p99 above twice the first chunk's, or above 10 ms.
  const stableBound = Math.max(2 * p99s[0], 10);
  const unit = ctx.opts.quick ? `${chunkSeconds}-s chunk` : 'minute';
  return {
    id: 'soak',
    title: 'Soak: sustained load on the local server (#8)',
    method: `\`isoatlas serve\` on the demo tree; autocannon at a steady ${RATE} requests/s overall (\`overallRate\`, latencies corrected for coordinated omission) over ${CONNECTIONS} connections for ${chunks} × ${chunkSeconds} s, each connection reopened every ${RECONNECT_EVERY} requests (see bench/soak.ts) and cycling through ${profile.length} requests (genes by symbol and id, isoforms by name and id, pages, domains, neoantigens, structure redirect, search exact and fuzzy, release, an unknown gene → 404, limit=500 → 400). After a 5-s warm-up at the same rate (not counted), RSS (/proc VmRSS) sampled every 5 s and at the end of each ${unit}.`,
    tables: [
      {
        headers: [
          unit,
          'requests',
          'requests/s',
          'p50 (ms)',
          'p99 (ms)',
          'RSS at end (MiB)',
          'machine load avg (1 min)',
        ],
        rows: minutes.map((m, i) => [
          String(i + 1),
          fmt(m.requests),
          fmt(m.rps),
          String(m.p50Ms),
          String(m.p99Ms),
          mib(m.rssEnd).toFixed(1),
          m.loadAvg.toFixed(2),
        ]),
      },
    ],
    targets: [
      {
        what: 'errors (statuses other than 200/307/400/404 where expected)',
        target: '0',
        measured: fmt(errors),
        met: errors === 0,
      },
      { what: 'socket errors and timeouts', target: '0', measured: fmt(socketErrors), met: socketErrors === 0 },
      {
        what: `RSS growth, end of ${unit} 1 → end`,
        target: '< 10%',
        measured: `${growth.toFixed(1)}% (${mib(rssFirst).toFixed(1)} → ${mib(rssLast).toFixed(1)} MiB)`,
        met: growth < 10,
      },
      {
        what: `p99 stable (every later ${unit} ≤ max(2 × the first, 10 ms))`,
        target: `≤ ${stableBound.toFixed(1)} ms`,
        measured: p99s.length > 1 ? `${p99s[0]} ms first, ${laterP99} ms worst later` : 'one chunk only',
        met: p99s.length > 1 ? laterP99 <= stableBound : null,
      },
    ],
    notes: [
      `${fmt(total)} requests in all; statuses: ${Object.entries(status)
        .map(([c, k]) => `${c} × ${fmt(k)}`)
        .join(', ')}.`,
      'The machine load average includes the server and the load generator themselves (about 1 on this 2-core machine); more means other work ran alongside.',
      `RSS samples (every 5 s): min ${mib(Math.min(...rss.map((r) => r.bytes))).toFixed(1)} MiB, max ${mib(Math.max(...rss.map((r) => r.bytes))).toFixed(1)} MiB.`,
    ],
    headline: `soak ${fmt(total)} requests, ${errors + socketErrors} errors, RSS ${growth >= 0 ? '+' : ''}${growth.toFixed(1)}%`,
  };
}
