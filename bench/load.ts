// One load run, with autocannon (programmatic API, in this process; paths in turn, a steady rate)
// or wrk (a separate C process): the same generator, connections and duration against every server
// of a comparison, so their figures compare.
import autocannon from 'autocannon';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';

const execFileAsync = promisify(execFile);

export interface LoadResult {
  requests: number;
  seconds: number;
  rps: number;
  p50Ms: number;
  p99Ms: number;
  /** Connection errors and timeouts. */
  socketErrors: number;
  status: Record<string, number>;
}

export interface LoadOptions {
  base: string;
  paths: string[];
  connections: number;
  seconds: number;
  /** Steady overall rate (requests/s); unset = as fast as the server answers. */
  rate?: number;
  /** Each connection is closed and opened again after this many requests. */
  reconnectEvery?: number;
}

export async function load(opts: LoadOptions): Promise<LoadResult> {
  // reconnectRate (autocannon's -D/--reconnectRate) is missing from its type definitions.
  const options: Parameters<typeof autocannon>[0] & { reconnectRate?: number } = {
    url: opts.base,
    connections: opts.connections,
    duration: opts.seconds,
    overallRate: opts.rate,
    reconnectRate: opts.reconnectEvery,
    timeout: 10,
    // Each connection walks through the paths in turn.
    requests: opts.paths.map((path) => ({ method: 'GET', path })),
  };
  const result = await autocannon(options);
  const status: Record<string, number> = {};
  for (const [code, { count }] of Object.entries(result.statusCodeStats ?? {})) status[code] = Number(count);
  return {
    requests: result.requests.total,
    seconds: result.duration,
    rps: result.requests.total / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    socketErrors: result.errors + result.timeouts,
    status,
  };
}

export const WRK_BIN = '/usr/bin/wrk';

export function hasWrk(): boolean {
  return existsSync(WRK_BIN);
}

const MS_PER_UNIT: Record<string, number> = { us: 0.001, ms: 1, s: 1000, m: 60_000 };

/** One load run with wrk (C, one thread): far lighter per request than autocannon, which runs in
 * this Node process and takes a core's worth of the machine from the server it measures. Several
 * paths are asked for in turn, through a Lua script (its request() makes each request). */
export async function wrkLoad(opts: { base: string; paths: string[]; connections: number; seconds: number }): Promise<LoadResult> {
  const args = ['-t1', `-c${opts.connections}`, `-d${opts.seconds}s`, '--timeout', '10s', '--latency'];
  let script: string | null = null;
  if (opts.paths.length > 1) {
    script = join(mkdtempSync(join(tmpdir(), 'isoatlas-wrk-')), 'paths.lua');
    const list = opts.paths.map((p) => JSON.stringify(p)).join(',\n');
    writeFileSync(script, `local paths = {\n${list}\n}\nlocal i = 0\nrequest = function()\n  i = i % #paths + 1\n  return wrk.format("GET", paths[i])\nend\n`);
    args.push('-s', script);
  }
  let stdout: string;
  try {
    ({ stdout } = await execFileAsync(WRK_BIN, [...args, `${opts.base}${opts.paths[0]}`]));
  } finally {
    if (script) rmSync(dirname(script), { recursive: true, force: true });
  }
  const number = (re: RegExp) => {
    const m = re.exec(stdout);
    if (!m) throw new Error(`unexpected wrk output:\n${stdout}`);
    return m;
  };
  const latency = (pct: string) => {
    const [, value, unit] = number(new RegExp(`^\\s+${pct}%\\s+([\\d.]+)(us|ms|s|m)\\s*$`, 'm'));
    return Number(value) * MS_PER_UNIT[unit];
  };
  const [, requests, seconds, unit] = number(/(\d+) requests in ([\d.]+)(us|ms|s|m),/);
  const elapsed = (Number(seconds) * MS_PER_UNIT[unit]) / 1000;
  // wrk counts answers of status ≥ 400 only; the caller checks beforehand that the path answers 200.
  const failed = Number(/Non-2xx or 3xx responses: (\d+)/.exec(stdout)?.[1] ?? 0);
  const socket = /Socket errors: connect (\d+), read (\d+), write (\d+), timeout (\d+)/.exec(stdout);
  const socketErrors = socket ? socket.slice(1).reduce((sum, n) => sum + Number(n), 0) : 0;
  const status: Record<string, number> = { '200': Number(requests) - failed };
  if (failed) status['4xx/5xx'] = failed;
  return { requests: Number(requests), seconds: elapsed, rps: Number(requests) / elapsed, p50Ms: latency('50'), p99Ms: latency('99'), socketErrors, status };
}
