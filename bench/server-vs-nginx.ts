// Section 3: the local server (`isoatlas serve`) against nginx serving the same tree on the same
// machine, driven by the same load generator with the same connections and duration, alternating
// servers between runs so drift is shared. Target (issue #7): ≥ 0.7 × nginx on file-backed routes.
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import type { BenchContext } from './context.js';
import { hasWrk, load, wrkLoad, type LoadResult } from './load.js';
import { hotspots, mainProfile, monotonicMicros } from './profile.js';
import type { SectionReport, Target } from './report.js';
import { geneIds, pickSamples } from './samples.js';
import { startBareNode, startLocalServer, startNginx, type RunningServer } from './servers.js';
import { fmt, fmtSummary, summarize } from './stats.js';

const TARGET_RATIO = 0.7;

interface Comparison {
  name: string;
  /** The paths loaded, in turn (mostly one). */
  local: string[];
  /** null: nginx cannot serve this route (no equivalent file). */
  nginx: string[] | null;
  fileBacked: boolean;
  /** Also measure bare node:http serving this tree file from memory (the Node ceiling). */
  bare?: boolean;
  note?: string;
}

function expectOnly200(server: string, path: string, r: LoadResult): void {
  const other = Object.entries(r.status).filter(([code]) => code !== '200');
  if (other.length || r.socketErrors) throw new Error(`${server} ${path}: unexpected answers ${JSON.stringify(r.status)}, ${r.socketErrors} socket errors`);
}

export async function benchServerVsNginx(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const s = pickSamples(tree);
  const api = '/api/v1';
  const genes = geneIds(tree);
  const routes: Comparison[] = [
    { name: 'gene record', local: [`${api}/genes/${s.geneId}`], nginx: [`/${s.files.gene}`], fileBacked: true, bare: true },
    { name: 'isoform by name', local: [`${api}/isoforms/${s.transcriptName}`], nginx: [`/${s.files.isoform}`], fileBacked: true, note: 'nginx cannot resolve names: it gets the file by transcript id' },
    {
      name: 'every gene record in turn',
      local: genes.map((id) => `${api}/genes/${id}`),
      nginx: genes.map((id) => `/api/v1/genes/${id}.json`),
      fileBacked: true,
      note: `all ${fmt(genes.length)} gene records of the release, one after another (a wrk Lua script), so no answer is the one just given; the local server's memory of targets answered (README, the edge function) holds them all after the warm-up`,
    },
    { name: 'isoform page limit=10', local: [`${api}/genes/${s.geneId}/isoforms?limit=10`], nginx: [`/${s.files.page}`], fileBacked: true, note: 'the server slices 10 items from the pre-split page file once and keeps that answer (README, the edge function); nginx serves the whole pre-split page of up to 100' },
    { name: 'search', local: [`${api}/search?query=${encodeURIComponent(s.symbol)}`], nginx: null, fileBacked: false, note: 'nginx has no search' },
  ];
  const connections = 10;
  const seconds = ctx.opts.quick ? 2 : 10;
  const runs = ctx.opts.runs;
  // wrk when installed: a C process with one thread leaves the servers most of the second core.
  // autocannon runs in this Node process and needs about a core of its own: it capped nginx and bare
  // node:http at what it could generate (bare Node came out faster than nginx) and took CPU from the
  // local server, so its figures measured the generator as much as the servers.
  const generator = hasWrk() ? 'wrk' : 'autocannon';
  const loadRun = (base: string, paths: string[], secs: number) =>
    generator === 'wrk' ? wrkLoad({ base, paths, connections, seconds: secs }) : load({ base, paths, connections, seconds: secs });
  const answers200 = async (server: RunningServer, paths: string[]) => {
    for (const path of paths) {
      const res = await fetch(`${server.base}${path}`);
      await res.arrayBuffer();
      if (res.status !== 200) throw new Error(`${server.name} ${path}: ${res.status} before the load run`);
    }
  };

  const results = new Map<string, { local: LoadResult[]; nodeHttp: LoadResult[]; nginx: LoadResult[]; bare: LoadResult[]; bareNet: LoadResult[] }>(
    routes.map((r) => [r.name, { local: [], nodeHttp: [], nginx: [], bare: [], bareNet: [] }]),
  );
  const started: RunningServer[] = [];
  try {
    const local = await startLocalServer(tree, ctx.tmp).then((x) => (started.push(x), x));
    // The same server on Node's http front end (`--http node`): what node-net.ts is measured against.
    const nodeHttp = await startLocalServer(tree, ctx.tmp, { http: 'node' }).then((x) => (started.push(x), x));
    const nginx = await startNginx(tree, ctx.tmp).then((x) => (started.push(x), x));
    const bare = await startBareNode(join(tree, s.files.gene)).then((x) => (started.push(x), x));
    const bareNet = await startBareNode(join(tree, s.files.gene), 'net').then((x) => (started.push(x), x));
    ctx.log(`  warming up both servers…`);
    for (const r of routes) {
      await answers200(local, r.local);
      await loadRun(local.base, r.local, 2);
      await answers200(nodeHttp, r.local).then(() => loadRun(nodeHttp.base, r.local, 2));
      if (r.nginx) await answers200(nginx, r.nginx).then(() => loadRun(nginx.base, r.nginx!, 2));
      if (r.bare) await answers200(bare, ['/']).then(() => loadRun(bare.base, ['/'], 2));
      if (r.bare) await answers200(bareNet, ['/']).then(() => loadRun(bareNet.base, ['/'], 2));
    }
    for (let run = 0; run < runs; run++) {
      for (const r of routes) {
        const order: [RunningServer, string[] | null, 'local' | 'nodeHttp' | 'nginx' | 'bare' | 'bareNet'][] = [
          [local, r.local, 'local'],
          [nodeHttp, r.local, 'nodeHttp'],
          [nginx, r.nginx, 'nginx'],
          [bare, r.bare ? ['/'] : null, 'bare'],
          [bareNet, r.bare ? ['/'] : null, 'bareNet'],
        ];
        if (run % 2 === 1) order.reverse();
        for (const [server, path, key] of order) {
          if (!path) continue;
          const res = await loadRun(server.base, path, seconds);
          expectOnly200(server.name, path.length === 1 ? path[0] : `${path.length} paths`, res);
          results.get(r.name)![key].push(res);
          ctx.log(`  run ${run + 1}/${runs} ${r.name} ${server.name}: ${fmt(res.rps)} req/s, p99 ${res.p99Ms} ms`);
        }
      }
    }
  } finally {
    for (const server of started) await server.stop();
  }

  const rows: string[][] = [];
  const targets: Target[] = [];
  let ceiling = '';
  for (const r of routes) {
    const res = results.get(r.name)!;
    const lr = summarize(res.local.map((x) => x.rps));
    const lp = summarize(res.local.map((x) => x.p99Ms));
    const nr = res.nginx.length ? summarize(res.nginx.map((x) => x.rps)) : null;
    const np = res.nginx.length ? summarize(res.nginx.map((x) => x.p99Ms)) : null;
    // Ratios are taken run by run (the servers of a run are loaded one right after the other, so
    // they share the machine's state), then summarized: the median of medians taken from different
    // runs would mix a busy run of one server with a quiet run of the other.
    const ratios = nr ? summarize(res.local.map((x, i) => x.rps / res.nginx[i].rps)) : null;
    const ratio = ratios ? ratios.median : null;
    const hr = summarize(res.nodeHttp.map((x) => x.rps));
    const hRatios = nr ? summarize(res.nodeHttp.map((x, i) => x.rps / res.nginx[i].rps)) : null;
    if (res.bare.length && nr) {
      const br = summarize(res.bare.map((x) => x.rps));
      const bareToNginx = summarize(res.bare.map((x, i) => x.rps / res.nginx[i].rps));
      const localToBare = summarize(res.local.map((x, i) => x.rps / res.bare[i].rps));
      const spread = (x: typeof ratios) => `${x!.median.toFixed(2)} (${x!.min.toFixed(2)}–${x!.max.toFixed(2)})`;
      const nr2 = summarize(res.bareNet.map((x) => x.rps));
      const netToNginx = summarize(res.bareNet.map((x, i) => x.rps / res.nginx[i].rps));
      const localToNet = summarize(res.local.map((x, i) => x.rps / res.bareNet[i].rps));
      ceiling = `Ceilings for any Node server here, answering the ${r.name} file's bytes from memory to every request (no routing, no counting, no log, no Web Request/Response, no file read; bench/bare-node-server.mjs): bare \`node:http\` (for \`--http node\`) does ${fmtSummary(br)} requests/s, p99 ${fmtSummary(summarize(res.bare.map((x) => x.p99Ms)), 1)} ms: ${spread(bareToNginx)} × nginx; bare \`node:net\` (for the default front end: each request found by its blank line, the same bytes written back) does ${fmtSummary(nr2)} requests/s: ${spread(netToNginx)} × nginx. The local server does ${spread(localToBare)} × bare node:http and ${spread(localToNet)} × bare node:net (ratios run by run).`;
    }
    rows.push([
      r.name,
      r.local.length === 1 ? `\`${r.local[0].replace(api, '')}\`` : `${fmt(r.local.length)} paths in turn (\`${r.local[0].replace(api, '')}\`, …)`,
      fmtSummary(lr),
      fmtSummary(lp, 1),
      nr ? fmtSummary(nr) : 'n/a',
      np ? fmtSummary(np, 1) : 'n/a',
      ratio !== null ? `${ratio.toFixed(2)} (${ratios!.min.toFixed(2)}–${ratios!.max.toFixed(2)})` : 'n/a',
      fmtSummary(hr),
      hRatios ? `${hRatios.median.toFixed(2)} (${hRatios.min.toFixed(2)}–${hRatios.max.toFixed(2)})` : 'n/a',
    ]);
    if (r.fileBacked && ratio !== null) targets.push({ what: `${r.name}: local ÷ nginx requests/s`, target: `≥ ${TARGET_RATIO}`, measured: ratio.toFixed(2), met: ratio >= TARGET_RATIO });
  }

  const notes = routes.filter((r) => r.note).map((r) => `${r.name}: ${r.note}.`);
  if (ceiling) notes.push(ceiling);
  notes.push(
    'The local server is `isoatlas serve` on its default HTTP front end (node-net.ts, its own HTTP/1.1 framing over node:net); `--http node` is the same server on Node\'s http server, loaded in the same runs.',
    'nginx runs `worker_processes 1` (the Node server is one process), `access_log off`, sendfile; the local server runs with its default open access control (per-IP counting on, limit raised so the load is never throttled) and writes its one log line per request (batched, see README) to /dev/null.',
    'Both servers and the load generator share the machine’s 2 cores: figures are relative, not what either server does on dedicated hardware.',
  );
  const headline = targets.map((t) => `${t.what.split(':')[0]} ${t.measured}×${t.met ? '' : ' MISSED'}`).join(', ');
  if (targets.some((t) => t.met === false)) {
    ctx.log('  target missed: profiling the local server on the gene route (node --cpu-prof)…');
    const dir = join(ctx.tmp, 'cpu-prof');
    mkdirSync(dir, { recursive: true });
    const profiled = await startLocalServer(tree, ctx.tmp, { nodeArgs: ['--cpu-prof', `--cpu-prof-dir=${dir}`] });
    const window = { from: 0, to: 0 };
    try {
      await loadRun(profiled.base, routes[0].local, 2); // warm-up, not counted
      window.from = monotonicMicros();
      await loadRun(profiled.base, routes[0].local, seconds);
      window.to = monotonicMicros();
    } finally {
      await profiled.stop();
    }
    const file = mainProfile(dir);
    if (file) {
      const top = hotspots(file, 12, window);
      notes.push(`Where the local server spends its CPU on the gene route (\`node --cpu-prof\` over one more ${seconds}-s load run after a warm-up; self time as a share of the main thread's non-idle time): ${top.map((h) => `${h.frame} ${h.percent.toFixed(1)}%`).join('; ')}.`);
    }
  }
  return {
    id: 'server-vs-nginx',
    title: '3. Local server against nginx',
    method:
      generator === 'wrk'
        ? `wrk (\`wrk -t1 -c${connections}\`: one generator thread in its own process) with ${connections} connections for ${seconds} s per run against each server on loopback, ${runs} runs per route, servers alternating which goes first each run; 2 s warm-up per route and server; each path checked to answer 200 before it is loaded, and a run with any answer ≥ 400 or socket error fails. Requests/s = requests completed ÷ run time; p99 latency from wrk's latency distribution; local ÷ nginx is taken run by run (each run loads the servers one right after the other) and its median reported with the spread. wrk rather than autocannon: autocannon runs in the bench's Node process and needs about a core of its own, so it capped nginx and bare node:http at what it could generate (bare Node came out faster than nginx) and took CPU from the local server.`
        : `autocannon (programmatic, in the bench process; wrk is not installed) with ${connections} connections for ${seconds} s per run against each server on loopback, ${runs} runs per route, servers alternating which goes first each run; 2 s warm-up per route and server. Requests/s = requests completed ÷ run time; p99 latency from autocannon's histogram; local ÷ nginx is taken run by run and its median reported with the spread. autocannon needs about a core of its own: it caps nginx's figures at what it can generate and takes CPU from the local server.`,
    tables: [{ headers: ['route', 'local path', 'local req/s', 'local p99 (ms)', 'nginx req/s', 'nginx p99 (ms)', 'local ÷ nginx', '`--http node` req/s', '`--http node` ÷ nginx'], rows }],
    targets,
    notes,
    headline: `server/nginx: ${headline}`,
  };
}
