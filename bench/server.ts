// Section 3: the local server (`isoatlas serve`) on loopback at a fixed request rate per route,
// p50/p99 latency with coordinated omission corrected (autocannon's overallRate), and nginx serving
// the same tree's files at the same rate, reported as information: nginx cannot resolve names,
// search or count requests, so it is a reference for the transport, not a target.
import type { BenchContext } from './context.js';
import { load, type LoadResult } from './load.js';
import type { SectionReport } from './report.js';
import { pickSamples } from './samples.js';
import { startLocalServer, startNginx, type RunningServer } from './servers.js';
import { fmt, fmtSummary, summarize } from './stats.js';
import { existsSync } from 'node:fs';
import { NGINX_BIN } from './machine.js';

/** Well below what either server answers on this machine, so latency is measured, not queueing. */
const RATE = 500;
const CONNECTIONS = 10;

interface Case {
  name: string;
  local: string;
  /** The tree file nginx serves for the same answer, or null when it has none. */
  nginx: string | null;
}

export async function benchServer(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const s = pickSamples(tree);
  const api = '/api/v1';
  const cases: Case[] = [
    { name: 'gene record', local: `${api}/genes/${s.geneId}`, nginx: `/${s.files.gene}` },
    { name: 'isoform by name', local: `${api}/isoforms/${s.transcriptName}`, nginx: `/${s.files.isoform}` },
    { name: 'isoform page limit=10', local: `${api}/genes/${s.geneId}/isoforms?limit=10`, nginx: `/${s.files.page}` },
    { name: 'search', local: `${api}/search?query=${encodeURIComponent(s.symbol)}`, nginx: null },
  ];
  const seconds = ctx.opts.quick ? 3 : 10;
  const runs = ctx.opts.runs;
  const at = (server: RunningServer, path: string) => load({ base: server.base, paths: [path], connections: CONNECTIONS, seconds, rate: RATE });
  const results = new Map(cases.map((c) => [c.name, { local: [] as LoadResult[], nginx: [] as LoadResult[] }]));
  const started: RunningServer[] = [];
  try {
    const local = await startLocalServer(tree, ctx.tmp).then((x) => (started.push(x), x));
    // Information only: without nginx installed its columns say so.
    const nginx = existsSync(NGINX_BIN) ? await startNginx(tree, ctx.tmp).then((x) => (started.push(x), x)) : null;
    for (const c of cases) {
      await expect200(local, c.local);
      await load({ base: local.base, paths: [c.local], connections: CONNECTIONS, seconds: 2, rate: RATE }); // warm-up
      if (c.nginx && nginx) await expect200(nginx, c.nginx);
    }
    for (let run = 0; run < runs; run++) {
      for (const c of cases) {
        const r = await at(local, c.local);
        checkOnly200('isoatlas serve', c.local, r);
        results.get(c.name)!.local.push(r);
        if (c.nginx && nginx) {
          const n = await at(nginx, c.nginx);
          checkOnly200('nginx', c.nginx, n);
          results.get(c.name)!.nginx.push(n);
        }
        ctx.log(`  run ${run + 1}/${runs} ${c.name}: p50 ${r.p50Ms} ms, p99 ${r.p99Ms} ms`);
      }
    }
  } finally {
    for (const server of started) await server.stop();
  }
  const rows = cases.map((c) => {
    const r = results.get(c.name)!;
    const ms = (list: LoadResult[], pick: (x: LoadResult) => number) => (list.length ? fmtSummary(summarize(list.map(pick)), 1) : 'n/a');
    return [c.name, `\`${c.local.replace(api, '')}\``, ms(r.local, (x) => x.p50Ms), ms(r.local, (x) => x.p99Ms), ms(r.nginx, (x) => x.p50Ms), ms(r.nginx, (x) => x.p99Ms)];
  });
  const gene = results.get('gene record')!.local;
  return {
    id: 'server',
    title: 'Local server at a fixed rate, nginx as information',
    method: `autocannon (in the bench process) at a steady ${RATE} requests/s overall over ${CONNECTIONS} connections for ${seconds} s per run, ${runs} runs per route, against \`isoatlas serve\` (Node's http server, default open access control with the per-IP limit raised so the load is never throttled, request log to /dev/null) and nginx (\`worker_processes 1\`, sendfile, access log off) serving the same tree's files; latencies corrected for coordinated omission; each path checked to answer 200 first, and a run with any other answer fails. Medians of the runs with their spread.`,
    tables: [{ headers: ['route', 'path', 'serve p50 (ms)', 'serve p99 (ms)', 'nginx p50 (ms)', 'nginx p99 (ms)'], rows }],
    targets: [],
    notes: [
      'nginx is information, not a target: it serves files by their tree path and cannot resolve names, slice pages, search or count requests.',
      'The servers and the load generator share the machine’s 2 cores: figures are relative, not what either server does on dedicated hardware.',
      'autocannon records latencies in whole milliseconds: 0 means under a millisecond.',
    ],
    headline: `serve gene p99 ${fmt(summarize(gene.map((x) => x.p99Ms)).median, 1)} ms at ${RATE}/s`,
  };
}

async function expect200(server: RunningServer, path: string): Promise<void> {
  const res = await fetch(`${server.base}${path}`);
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`${server.name} ${path}: ${res.status} before the load run`);
}

function checkOnly200(server: string, path: string, r: LoadResult): void {
  const other = Object.entries(r.status).filter(([code]) => code !== '200');
  if (other.length || r.socketErrors) throw new Error(`${server} ${path}: unexpected answers ${JSON.stringify(r.status)}, ${r.socketErrors} socket errors`);
}
