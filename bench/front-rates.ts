// Requests per second, side by side, in alternating order: `isoatlas serve` alone, its nginx front
// (`isoatlas nginx-config`, anonymous requests counted by nginx in arrangement A), and nginx alone
// serving the same files (a plain static config, no admission, no limits), for a gene record, an
// isoform page and a 404; optionally other checkouts' servers beside them (`--server
// label=<checkout>:<tree>`: an earlier commit, each over a tree it built). wrk (-t1 -c10), one run per
// server and path per round, the order reversed every other round (ABC CBA …), with the machine's
// load average (1 min) before each run, and for each server alone its CPU per answer (a loaded
// machine disturbs it less than the rate). Every path is checked to answer as expected first.
//
//   npx tsx bench/front-rates.ts [--tree <tree>] [--rounds 4] [--seconds 10] [--server label=<dir>:<tree>]…
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';
import { NGINX_BIN } from './machine.js';
import { pickSamples } from './samples.js';
import { freePort, killAllServers, startLocalServer, startNginxFront, type RunningServer } from './servers.js';
import { standaloneNginx } from '../edge/server/nginx-config.js';
import { ROOT } from './context.js';

export interface Target {
  label: string;
  base: string;
  /** A server alone: its CPU per answer is measured too. */
  pid?: number;
}
export interface RateRow {
  round: number;
  target: string;
  path: string;
  rps: number;
  /** The process's user + system CPU per request, µs (servers alone). */
  cpuUs?: number;
  load: number;
}

/** User + system CPU of a process so far, µs (/proc/<pid>/stat, in clock ticks of 10 ms). */
function cpuUs(pid: number): number {
  const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ');
  return (Number(fields[11]) + Number(fields[12])) * 10_000;
}

/** Debian's wrk (apt-get install wrk), the load generator of these figures and of issue #47's. */
export const WRK_BIN = '/usr/bin/wrk';

/** One wrk run: requests/s and requests in all. */
function wrk(url: string, seconds: number): { rps: number; requests: number } {
  const r = spawnSync(WRK_BIN, ['-t1', '-c10', `-d${seconds}s`, url], { encoding: 'utf8' });
  const m = /Requests\/sec:\s+([\d.]+)/.exec(r.stdout);
  const n = /(\d+) requests in/.exec(r.stdout);
  if (r.status !== 0 || !m || !n) throw new Error(`wrk ${url} failed: ${r.stderr || r.stdout}`);
  return { rps: Number(m[1]), requests: Number(n[1]) };
}

/** nginx alone serving the tree's files for the same paths: a JSON route as its file (`<path>.json`,
 * a list as its first page), a missing one 404. */
async function nginxAlone(tree: string, work: string): Promise<{ base: string; stop: () => void }> {
  const port = await freePort();
  mkdirSync(work, { recursive: true });
  const config = join(work, 'static.conf');
  writeFileSync(
    config,
    `server {
  listen 127.0.0.1:${port};
  access_log off;
  root ${tree};
  default_type "application/json; charset=utf-8";
  location /api/v1/ { try_files $uri.json $uri/0.json =404; }
}
`,
  );
  const { args } = standaloneNginx(work, config);
  const child = spawn(NGINX_BIN, [...args, '-g', 'daemon off;'], { stdio: 'ignore' });
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 100; i++) {
    if (
      await fetch(`${base}/api/v1/`).then(
        () => true,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { base, stop: () => child.kill('SIGTERM') };
}

/** `isoatlas serve` of another checkout (its own compiled CLI) over a tree it built, limits out of the way. */
async function otherServer(
  label: string,
  checkout: string,
  tree: string,
  work: string,
): Promise<RunningServer & { label: string }> {
  const dir = join(work, label);
  mkdirSync(join(dir, 'keys'), { recursive: true });
  writeFileSync(
    join(dir, 'access.json'),
    JSON.stringify({ open: { anonymous_per_ip: { per_minute: 1_000_000_000 } } }),
  );
  const port = await freePort();
  const child = spawn(
    process.execPath,
    [
      join(checkout, 'bin/isoatlas.mjs'),
      'serve',
      '--dir',
      tree,
      '--port',
      String(port),
      '--host',
      '127.0.0.1',
      '--keys-dir',
      join(dir, 'keys'),
      '--access-config',
      join(dir, 'access.json'),
    ],
    { cwd: checkout, stdio: 'ignore' },
  );
  const base = `http://127.0.0.1:${port}`;
  for (let i = 0; i < 300; i++) {
    if (
      await fetch(`${base}/api/v1/release`).then(
        (r) => r.ok,
        () => false,
      )
    )
      break;
    await new Promise((r) => setTimeout(r, 100));
  }
  return { label, name: label, base, pid: child.pid!, stop: async () => void child.kill('SIGINT') };
}

export async function frontRates(opts: {
  tree: string;
  rounds: number;
  seconds: number;
  others: { label: string; checkout: string; tree: string }[];
  log: (line: string) => void;
}): Promise<{ rows: RateRow[]; paths: Record<string, string> }> {
  const s = pickSamples(opts.tree);
  const paths = {
    'gene record': `/api/v1/genes/${s.geneId}`,
    'isoform page': `/api/v1/genes/${s.geneId}/isoforms`,
    '404': '/api/v1/genes/NOSUCHGENE1',
  };
  const expected: Record<string, number> = { 'gene record': 200, 'isoform page': 200, '404': 404 };
  const work = mkdtempSync(join(tmpdir(), 'isoatlas-front-rates-'));
  const stops: (() => unknown)[] = [];
  try {
    const server = await startLocalServer(opts.tree, work, { serveArgs: ['--trust-proxy', '127.0.0.1'] });
    stops.push(() => server.stop());
    const front = await startNginxFront(opts.tree, work, server);
    stops.push(() => front.stop());
    const alone = await nginxAlone(opts.tree, join(work, 'nginx-alone'));
    stops.push(alone.stop);
    const targets: Target[] = [
      { label: 'server alone', base: server.base, pid: server.pid },
      { label: 'front', base: front.base },
      { label: 'nginx alone', base: alone.base },
    ];
    for (const o of opts.others) {
      const other = await otherServer(o.label, resolve(o.checkout), resolve(o.tree), work);
      stops.push(() => other.stop());
      targets.push({ label: o.label, base: other.base, pid: other.pid });
    }
    for (const t of targets)
      for (const [name, path] of Object.entries(paths)) {
        const status = (await fetch(`${t.base}${path}`)).status;
        if (status !== expected[name])
          throw new Error(`${t.label} answered ${path} with ${status}, not ${expected[name]}`);
        wrk(`${t.base}${path}`, 2); // warm-up; for the front, what it keeps is kept after a few seconds
      }
    const rows: RateRow[] = [];
    for (let round = 1; round <= opts.rounds; round++) {
      const order = round % 2 ? targets : [...targets].reverse();
      for (const [name, path] of Object.entries(paths)) {
        for (const t of order) {
          const load = loadavg()[0];
          const before = t.pid ? cpuUs(t.pid) : 0;
          const { rps, requests } = wrk(`${t.base}${path}`, opts.seconds);
          const cpu = t.pid ? (cpuUs(t.pid) - before) / requests : undefined;
          rows.push({ round, target: t.label, path: name, rps, cpuUs: cpu, load });
          const spent = cpu === undefined ? '' : `, ${cpu.toFixed(0)} µs CPU each`;
          opts.log(`round ${round} ${name} ${t.label}: ${rps.toFixed(0)} req/s${spent} (load ${load.toFixed(2)})`);
        }
      }
    }
    return { rows, paths };
  } finally {
    for (const stop of stops.reverse()) await stop();
    killAllServers();
    rmSync(work, { recursive: true, force: true });
  }
}

if (process.argv[1] && import.meta.url === pathToFileURL(resolve(process.argv[1])).href) {
  const arg = (name: string, fallback?: string) => {
    const i = process.argv.indexOf(`--${name}`);
    return i > 0 ? process.argv[i + 1] : fallback;
  };
  const others = process.argv.flatMap((a, i) => {
    if (a !== '--server') return [];
    const m = /^([^=]+)=([^:]+):(.+)$/.exec(process.argv[i + 1] ?? '');
    if (!m) throw new Error('--server takes label=<checkout>:<tree>');
    return [{ label: m[1], checkout: m[2], tree: m[3] }];
  });
  const tree = arg('tree', join(ROOT, '.isoatlas/demo/tree'))!;
  if (!existsSync(join(tree, 'manifest.json'))) throw new Error(`${tree} holds no tree: give --tree`);
  const { rows } = await frontRates({
    tree,
    rounds: Number(arg('rounds', '4')),
    seconds: Number(arg('seconds', '10')),
    others,
    log: (line) => console.log(line),
  });
  console.log(JSON.stringify(rows));
}
