// The local server (`isoatlas serve`) on loopback at a fixed request rate per route, p50/p99 latency
// with coordinated omission corrected (autocannon's overallRate), and the same requests through its
// nginx front (`isoatlas nginx-config`), which answers from the file the server names at its admission
// and passes the rest on; then each at full speed on the file-backed routes.
import type { BenchContext } from './context.js';
import { load, type LoadResult } from './load.js';
import type { SectionReport } from './report.js';
import { pickSamples } from './samples.js';
import { startLocalServer, startNginxFront, type RunningServer } from './servers.js';
import { fmt, fmtSummary, summarize } from './stats.js';
import { existsSync } from 'node:fs';
import { NGINX_BIN } from './machine.js';

/** Well below what either answers on this machine, so latency is measured, not queueing. */
const RATE = 500;
const CONNECTIONS = 10;

interface Case {
  name: string;
  path: string;
  /** Whether the front answers it from the file (a canonical id, no query). */
  fromFile: boolean;
}

export async function benchServer(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const s = pickSamples(tree);
  const api = '/api/v1';
  const cases: Case[] = [
    { name: 'gene record by id', path: `${api}/genes/${s.geneId}`, fromFile: true },
    { name: 'isoform by id', path: `${api}/isoforms/${s.transcriptId}`, fromFile: true },
    { name: 'structure file', path: `/structures/${s.structureTranscriptId}.cif`, fromFile: true },
    // The server resolves the name at admission: the front sends the isoform's file.
    { name: 'isoform by name', path: `${api}/isoforms/${s.transcriptName}`, fromFile: true },
    { name: 'isoform page limit=10', path: `${api}/genes/${s.geneId}/isoforms?limit=10`, fromFile: false },
    { name: 'search', path: `${api}/search?query=${encodeURIComponent(s.symbol)}`, fromFile: false },
  ];
  const seconds = ctx.opts.quick ? 3 : 10;
  const runs = ctx.opts.runs;
  const at = (server: RunningServer, path: string, rate?: number) =>
    load({ base: server.base, paths: [path], connections: CONNECTIONS, seconds, rate });
  const results = new Map(
    cases.map((c) => [
      c.name,
      {
        serve: [] as LoadResult[],
        front: [] as LoadResult[],
        serveMax: [] as LoadResult[],
        frontMax: [] as LoadResult[],
      },
    ]),
  );
  const started: RunningServer[] = [];
  try {
    const serve = await startLocalServer(tree, ctx.tmp, { serveArgs: ['--trust-proxy', '127.0.0.1'] }).then(
      (x) => (started.push(x), x),
    );
    // Without nginx installed its columns say so.
    const front = existsSync(NGINX_BIN)
      ? await startNginxFront(tree, ctx.tmp, serve).then((x) => (started.push(x), x))
      : null;
    for (const c of cases) {
      for (const server of front ? [serve, front] : [serve]) {
        await expect200(server, c.path);
        await load({ base: server.base, paths: [c.path], connections: CONNECTIONS, seconds: 2, rate: RATE }); // warm-up
      }
    }
    for (let run = 0; run < runs; run++) {
      for (const c of cases) {
        const r = results.get(c.name)!;
        const measure = async (server: RunningServer, into: LoadResult[], rate?: number) => {
          const x = await at(server, c.path, rate);
          checkOnly200(server.name, c.path, x);
          into.push(x);
          return x;
        };
        const x = await measure(serve, r.serve, RATE);
        if (front) await measure(front, r.front, RATE);
        if (c.fromFile) {
          await measure(serve, r.serveMax);
          if (front) await measure(front, r.frontMax);
        }
        ctx.log(`  run ${run + 1}/${runs} ${c.name}: serve p50 ${x.p50Ms} ms, p99 ${x.p99Ms} ms`);
      }
    }
  } finally {
    for (const server of started) await server.stop();
  }
  const ms = (list: LoadResult[], pick: (x: LoadResult) => number, digits = 1) =>
    list.length ? fmtSummary(summarize(list.map(pick)), digits) : 'n/a';
  const latency = cases.map((c) => {
    const r = results.get(c.name)!;
    return [
      c.name,
      `\`${c.path.replace(api, '')}\``,
      c.fromFile ? 'file' : 'server',
      ms(r.serve, (x) => x.p50Ms),
      ms(r.serve, (x) => x.p99Ms),
      ms(r.front, (x) => x.p50Ms),
      ms(r.front, (x) => x.p99Ms),
    ];
  });
  const speed = cases
    .filter((c) => c.fromFile)
    .map((c) => {
      const r = results.get(c.name)!;
      return [c.name, ms(r.serveMax, (x) => x.rps, 0), ms(r.frontMax, (x) => x.rps, 0)];
    });
  const gene = results.get('gene record by id')!;
  const median = (list: LoadResult[], pick: (x: LoadResult) => number) =>
    list.length ? summarize(list.map(pick)).median : NaN;
  return {
    id: 'server',
    title: 'Local server, and its nginx front',
    method: `autocannon (in the bench process) over ${CONNECTIONS} connections for ${seconds} s per run, ${runs} runs per route, against \`isoatlas serve\` (Node's http server, default open access control with the per-IP limit raised so the load is never throttled, request log to /dev/null, \`--trust-proxy 127.0.0.1\`) and the nginx front before it (Debian's nginx, the config of \`isoatlas nginx-config\` in an http block with \`worker_processes 1\`, sendfile, its log to /dev/null): first at a steady ${RATE} requests/s overall (latencies corrected for coordinated omission), then, for the routes the front answers from files, as fast as each answers. Each path checked to answer 200 first, and a run with any other answer fails. Medians of the runs with their spread.`,
    tables: [
      {
        headers: [
          'route',
          'path',
          'front answers from',
          'serve p50 (ms)',
          'serve p99 (ms)',
          'front p50 (ms)',
          'front p99 (ms)',
        ],
        rows: latency,
      },
      { headers: ['route (as fast as answered)', 'serve (requests/s)', 'front (requests/s)'], rows: speed },
    ],
    targets: [],
    notes: [
      'In arrangement A (what this runs) the front counts anonymous requests itself and keeps their admissions, so a file it has kept the admission of is answered without the server; keyed requests, and every request in B, still take one admission of the server each.',
      'The servers and the load generator share the machine’s 2 cores: figures are relative, not what either does on dedicated hardware.',
      'autocannon records latencies in whole milliseconds: 0 means under a millisecond.',
    ],
    headline: `gene by id: serve ${fmt(
      median(gene.serveMax, (x) => x.rps),
      0,
    )}/s, front ${fmt(
      median(gene.frontMax, (x) => x.rps),
      0,
    )}/s at full speed`,
  };
}

async function expect200(server: RunningServer, path: string): Promise<void> {
  const res = await fetch(`${server.base}${path}`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${server.name} ${path}: ${res.status} before the load run`);
}

function checkOnly200(server: string, path: string, r: LoadResult): void {
  const other = Object.entries(r.status).filter(([code]) => code !== '200');
  if (other.length || r.socketErrors)
    throw new Error(
      `${server} ${path}: unexpected answers ${JSON.stringify(r.status)}, ${r.socketErrors} socket errors`,
    );
}
