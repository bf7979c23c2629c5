// The nginx front at demo and human scale: how many files it may answer from, the size of its config,
// the time and peak RSS of `isoatlas nginx-config`, how long Debian's nginx takes to load the config,
// what nginx holds in memory (master and worker together) once serving, and how long a request for a
// file takes through the front (its admission asked of the `isoatlas serve` behind it, which names the
// file) beside the same requests asked of the server itself; and, where wrk is installed, requests per
// second of the server alone, the front and nginx alone side by side (bench/front-rates.ts).
import { existsSync, mkdirSync, readFileSync, statSync } from 'node:fs';
import http from 'node:http';
import { spawn, spawnSync } from 'node:child_process';
import { join } from 'node:path';
import { ROOT, measureCli, type BenchContext } from './context.js';
import { forEachFrontFile, standaloneNginx } from '../edge/server/nginx-config.js';
import type { SectionReport } from './report.js';
import { fmt, mib, quantile } from './stats.js';
import { NGINX_BIN } from './machine.js';
import { freePort, nginxConfigArgs, startLocalServer } from './servers.js';
import { WRK_BIN, frontRates, type RateRow } from './front-rates.js';

/** Requests for files asked one after another, each file once, through the front and of the server. */
const LATENCY_REQUESTS = 2_000;

interface Scale {
  label: string;
  files: number;
  configBytes: number;
  generateSeconds: number;
  generatePeakRss: number;
  nginxStartSeconds: number;
  nginxPss: number;
  front: { p50: number; p99: number };
  serve: { p50: number; p99: number };
}

/** Proportional set size of a process (its share of pages it shares with others), in bytes. */
function pss(pid: number): number {
  const m = /^Pss:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/smaps_rollup`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

/** `count` of the requests nginx may answer from a file, drawn evenly at random (a fixed seed) as the
 * manifest is read shard by shard. */
async function sampleRequests(tree: string, count: number): Promise<string[]> {
  let seed = 34;
  const random = () => {
    seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
    return seed / 2 ** 31;
  };
  const sample: string[] = [];
  let seen = 0;
  await forEachFrontFile(tree, (_entry, uris) => {
    for (const uri of uris) {
      seen++;
      if (sample.length < count) sample.push(uri);
      else if (random() < count / seen) sample[Math.floor(random() * count)] = uri;
    }
  });
  return sample;
}

/** Milliseconds per request, asked one after another over one kept-alive connection; every answer
 * must be a 200. */
async function sequentialLatency(base: string, paths: string[]): Promise<{ p50: number; p99: number }> {
  const agent = new http.Agent({ keepAlive: true, maxSockets: 1 });
  const ms: number[] = [];
  try {
    for (const path of paths) {
      const t0 = performance.now();
      const status = await new Promise<number>((ok, fail) => {
        http
          .get(`${base}${path}`, { agent }, (res) => {
            res.resume();
            res.once('end', () => ok(res.statusCode ?? 0));
          })
          .once('error', fail);
      });
      ms.push(performance.now() - t0);
      if (status !== 200) throw new Error(`${base}${path} answered ${status}`);
    }
  } finally {
    agent.destroy();
  }
  return { p50: quantile(ms, 0.5), p99: quantile(ms, 0.99) };
}

async function measure(ctx: BenchContext, label: string, tree: string): Promise<Scale> {
  const dir = join(ctx.tmp, `front-${label}`);
  mkdirSync(dir, { recursive: true });
  const server = await startLocalServer(tree, ctx.tmp, { serveArgs: ['--trust-proxy', '127.0.0.1'] });
  try {
    const port = await freePort();
    const config = join(dir, 'isoatlas.conf');
    const generated = await measureCli(nginxConfigArgs(tree, server, port, config), ctx.tmp, `front-${label}`);
    const files = Number(/(\d+) files nginx may answer from/.exec(generated.stderr)?.[1] ?? NaN);
    const { args } = standaloneNginx(dir, config);
    const check = spawnSync(NGINX_BIN, [...args, '-t'], { encoding: 'utf8' });
    if (check.status !== 0) throw new Error(`nginx -t refused the generated config: ${check.stderr}`);
    // From start to listening: nginx reads the config before it binds the port.
    const t0 = performance.now();
    const child = spawn(NGINX_BIN, [...args, '-g', 'daemon off;'], { stdio: 'ignore' });
    let nginxStartSeconds = NaN;
    try {
      for (let i = 0; i < 1200; i++) {
        const up = await fetch(`http://127.0.0.1:${port}/.isoatlas/none`).then(
          () => true,
          () => false,
        );
        if (up) {
          nginxStartSeconds = (performance.now() - t0) / 1000;
          break;
        }
        await new Promise((r) => setTimeout(r, 50));
      }
      const paths = await sampleRequests(tree, LATENCY_REQUESTS);
      // Each path once through the front, then once of the server: neither finds the other's work cached
      // but the operating system's (both read the same files).
      const front = await sequentialLatency(`http://127.0.0.1:${port}`, paths);
      const serve = await sequentialLatency(server.base, paths);
      const workers = spawnSync('pgrep', ['-P', String(child.pid)], { encoding: 'utf8' })
        .stdout.split('\n')
        .filter(Boolean)
        .map(Number);
      const nginxPss = [child.pid!, ...workers].reduce((sum, pid) => sum + pss(pid), 0);
      const scale = {
        label,
        files,
        configBytes: statSync(config).size,
        generateSeconds: generated.seconds,
        generatePeakRss: generated.peakRssBytes,
        nginxStartSeconds,
        nginxPss,
        front,
        serve,
      };
      ctx.log(
        `  ${label}: ${fmt(files)} files, ${(scale.configBytes / 1024).toFixed(1)} KiB config in ${generated.seconds.toFixed(1)} s; nginx up in ${nginxStartSeconds.toFixed(2)} s, ${mib(nginxPss).toFixed(0)} MiB; a file through the front p50 ${front.p50.toFixed(1)} ms, p99 ${front.p99.toFixed(1)} ms`,
      );
      return scale;
    } finally {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
    }
  } finally {
    await server.stop();
  }
}

export async function benchFront(ctx: BenchContext): Promise<SectionReport> {
  if (!existsSync(NGINX_BIN)) throw new Error(`Debian's nginx is not installed (${NGINX_BIN}): apt-get install nginx`);
  const scales = [await measure(ctx, 'demo', (await ctx.demo()).tree)];
  const human = [ctx.human()?.tree, join(ROOT, '.isoatlas/human/tree')].find(
    (t) => t && existsSync(join(t, 'manifest.json')),
  );
  if (human) scales.push(await measure(ctx, 'human', human));
  else ctx.log('  no human-scale tree (run the build section, or `isoatlas demo --scale human`): demo scale only');
  const rates = existsSync(WRK_BIN)
    ? await frontRates({
        tree: (await ctx.demo()).tree,
        rounds: Math.max(2, ctx.opts.runs),
        seconds: ctx.opts.quick ? 3 : 10,
        others: [],
        log: (line) => ctx.log(`  ${line}`),
      })
    : null;
  const rows = scales.map((s) => [
    s.label,
    fmt(s.files),
    (s.configBytes / 1024).toFixed(1),
    s.generateSeconds.toFixed(1),
    mib(s.generatePeakRss).toFixed(0),
    s.nginxStartSeconds.toFixed(2),
    mib(s.nginxPss).toFixed(0),
    `${s.front.p50.toFixed(1)} / ${s.front.p99.toFixed(1)}`,
    `${s.serve.p50.toFixed(1)} / ${s.serve.p99.toFixed(1)}`,
  ]);
  const last = scales[scales.length - 1];
  return {
    id: 'front',
    title: 'The nginx front’s config',
    method: `\`isoatlas nginx-config\` over a rendered tree, its compressed copies beside the tree (written by the first run, found in place by later ones; BENCHMARKS.md, compression, times the writing) (one run, in a child process: wall time, peak RSS from getrusage), then Debian’s nginx started with the config in an http block (\`worker_processes 1\`) before an \`isoatlas serve\` of the tree: time from spawn until it answers on its port; ${fmt(LATENCY_REQUESTS)} requests for files drawn at random from the manifest, each asked once, one after another over one kept-alive connection, through the front and then of the server itself (milliseconds per request, p50 / p99); and the proportional set size (Pss, /proc/<pid>/smaps_rollup) of nginx’s master and worker together once it has served them. Where wrk is installed, requests per second of a gene record, an isoform page and a 404 (wrk -t1 -c10) from the server alone, the front and nginx alone serving the same files, in alternating order over the rounds (bench/front-rates.ts), with the load average over the runs.`,
    tables: [
      {
        headers: [
          'scale',
          'files nginx may answer from',
          'config (KiB)',
          'generated in (s)',
          'generator peak RSS (MiB)',
          'nginx up in (s)',
          'nginx memory, master + worker (MiB)',
          'a file through the front, p50 / p99 (ms)',
          'the same of the server, p50 / p99 (ms)',
        ],
        rows,
      },
      ...(rates ? [ratesTable(rates.rows)] : []),
    ],
    targets: [],
    notes: [
      'The config lists no files: the server names each one when nginx asks for the request’s admission, so neither the config nor nginx’s memory grows with the release.',
      'The generator reads the manifest one shard at a time and holds one shard and one group of compressed copies at once.',
    ],
    headline: `${last.label} front config ${(last.configBytes / 1024).toFixed(0)} KiB, nginx ${mib(last.nginxPss).toFixed(0)} MiB, a file p50 ${last.front.p50.toFixed(1)} ms`,
  };
}

/** Requests/s of each path through each server, the median of the rounds with their spread, and the
 * load average over the runs. */
function ratesTable(rows: RateRow[]): { headers: string[]; rows: string[][] } {
  const targets = [...new Set(rows.map((r) => r.target))];
  const paths = [...new Set(rows.map((r) => r.path))];
  const cell = (path: string, target: string) => {
    const of = rows.filter((r) => r.path === path && r.target === target).map((r) => r.rps);
    return `${fmt(Math.round(quantile(of, 0.5)))} (${fmt(Math.round(Math.min(...of)))}–${fmt(Math.round(Math.max(...of)))})`;
  };
  const loads = rows.map((r) => r.load);
  return {
    headers: ['path (wrk -t1 -c10, requests/s)', ...targets, 'front / server alone', 'load average'],
    rows: paths.map((path) => {
      const median = (t: string) =>
        quantile(
          rows.filter((r) => r.path === path && r.target === t).map((r) => r.rps),
          0.5,
        );
      return [
        path,
        ...targets.map((t) => cell(path, t)),
        `${(median('front') / median('server alone')).toFixed(2)}×`,
        `${Math.min(...loads).toFixed(1)}–${Math.max(...loads).toFixed(1)}`,
      ];
    }),
  };
}
