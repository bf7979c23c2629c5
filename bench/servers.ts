// The servers under load: `isoatlas serve` (a child process, as users run it) and its nginx front
// (the config `isoatlas nginx-config` writes), plus the RSS of a process from /proc.
import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { createServer } from 'node:net';
import { dirname, join } from 'node:path';
import { CLI, ROOT } from './context.js';
import { NGINX_BIN } from './machine.js';
import { standaloneNginx } from '../edge/server/nginx-config.js';

export interface RunningServer {
  name: string;
  base: string;
  pid: number;
  stop(): Promise<void>;
  /** The arrangement and limits it was started with (`--access`, `--access-config`), which its nginx
   * front's config must be written with too. */
  accessArgs?: string[];
}

/** Every server child this process started, so a failing benchmark cannot leave one running. */
const children = new Set<ChildProcess>();

function track(child: ChildProcess): ChildProcess {
  children.add(child);
  child.once('exit', () => children.delete(child));
  return child;
}

/** Kills whatever server children are still running (end of the bench, or after a failure). */
export function killAllServers(): void {
  for (const child of children) child.kill('SIGTERM'); // nginx's master takes its worker down with it on TERM, not on KILL
}

export function freePort(): Promise<number> {
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}

async function waitUntilServing(url: string, child: ChildProcess, output: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  let last = 'no answer';
  while (Date.now() < deadline) {
    if (child.exitCode !== null || child.signalCode !== null)
      throw new Error(`server exited before it was ready:\n${output()}`);
    try {
      const res = await fetch(url);
      const body = await res.text();
      if (res.ok) return;
      last = `${res.status} ${body.slice(0, 300)}`;
    } catch {
      // not listening yet
    }
    await new Promise((r) => setTimeout(r, 100));
  }
  child.kill('SIGTERM');
  throw new Error(`server at ${url} not ready within 30 s (last answer: ${last}):\n${output()}`);
}

function stopper(child: ChildProcess, signal: NodeJS.Signals = 'SIGTERM'): () => Promise<void> {
  return () =>
    new Promise((ok) => {
      if (child.exitCode !== null || child.signalCode !== null) return ok();
      child.once('exit', () => ok());
      child.kill(signal);
      setTimeout(() => child.kill('SIGKILL'), 15_000).unref();
    });
}

/** Limits high enough that the load generator is never throttled: the per-IP quota is part of what the
 * server does per request (it is counted), but 900/min would cap a benchmark at 15 requests/s. */
function writeBenchAccessConfig(dir: string): string {
  const file = join(dir, 'access.json');
  writeFileSync(file, JSON.stringify({ open: { anonymous_per_ip: { per_minute: 1_000_000_000 } } }));
  return file;
}

/** `isoatlas serve` on the tree, its request log to /dev/null; `nodeArgs` e.g. --cpu-prof. Its limits are
 * raised out of the way unless `defaultLimits`. */
export async function startLocalServer(
  tree: string,
  tmp: string,
  opts: { nodeArgs?: string[]; serveArgs?: string[]; defaultLimits?: boolean } = {},
): Promise<RunningServer> {
  const dir = join(tmp, `local-server-${Date.now()}`);
  mkdirSync(join(dir, 'keys'), { recursive: true });
  const port = await freePort();
  const accessArgs = [
    ...(opts.defaultLimits ? [] : ['--access-config', writeBenchAccessConfig(dir)]),
    ...(opts.serveArgs ?? []).flatMap((a, i, all) => (a === '--access' ? [a, all[i + 1]] : [])),
  ];
  const args = [
    ...(opts.nodeArgs ?? []),
    CLI,
    'serve',
    '--dir',
    tree,
    '--port',
    String(port),
    '--host',
    '127.0.0.1',
    '--keys-dir',
    join(dir, 'keys'),
    ...accessArgs,
    ...(opts.serveArgs ?? []).filter((a, i, all) => a !== '--access' && all[i - 1] !== '--access'),
  ];
  const child = track(spawn(process.execPath, args, { cwd: ROOT, stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const base = `http://127.0.0.1:${port}`;
  await waitUntilServing(`${base}/api/v1/release`, child, () => stderr);
  // SIGINT: serve() finishes in-flight requests and exits normally, so --cpu-prof gets written.
  return { name: 'isoatlas serve', base, pid: child.pid!, stop: stopper(child, 'SIGINT'), accessArgs };
}

/** `isoatlas nginx-config`'s arguments for a front on 127.0.0.1:`port` before `server`, its log to
 * /dev/null, its config written to `out`. */
export function nginxConfigArgs(tree: string, server: RunningServer, port: number, out: string): string[] {
  return [
    'nginx-config',
    '--dir',
    tree,
    '--upstream',
    new URL(server.base).host,
    '--listen',
    `127.0.0.1:${port}`,
    '--access-log',
    '/dev/null',
    '--out',
    out,
    '--cache-dir',
    join(dirname(out), 'cache'),
    ...(server.accessArgs ?? []),
  ];
}

/** The nginx front of `isoatlas nginx-config` (one worker, its log to /dev/null) before `server`,
 * which must trust 127.0.0.1 (`--trust-proxy`). */
export async function startNginxFront(tree: string, tmp: string, server: RunningServer): Promise<RunningServer> {
  const dir = join(tmp, `nginx-${Date.now()}`);
  mkdirSync(dir, { recursive: true });
  const port = await freePort();
  const front = join(dir, 'isoatlas.conf');
  const generated = spawnSync(process.execPath, [CLI, ...nginxConfigArgs(tree, server, port, front)], {
    cwd: ROOT,
    encoding: 'utf8',
  });
  if (generated.status !== 0) throw new Error(`isoatlas nginx-config failed: ${generated.stderr}`);
  const { args, errorLog } = standaloneNginx(dir, front);
  const child = track(spawn(NGINX_BIN, [...args, '-g', 'daemon off;'], { stdio: ['ignore', 'ignore', 'pipe'] }));
  let stderr = '';
  child.stderr!.on('data', (d) => (stderr += d));
  const base = `http://127.0.0.1:${port}`;
  await waitUntilServing(`${base}/api/v1/release`, child, () => stderr + readLog(errorLog));
  // The worker serves; its RSS is what matters, but the master's pid is what we can stop.
  return { name: 'nginx front', base, pid: child.pid!, stop: stopper(child, 'SIGTERM') };
}

function readLog(file: string): string {
  try {
    return readFileSync(file, 'utf8');
  } catch {
    return '';
  }
}

/** Resident set size of a process in bytes (VmRSS), or null once it is gone. */
export function rssBytes(pid: number): number | null {
  try {
    const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m ? Number(m[1]) * 1024 : null;
  } catch {
    return null;
  }
}

/** Connections the kernel lists (/proc/net/tcp) as established between the server's `port` and the
 * IPv4 address `client`: what the server has not closed, whatever the client has read. */
export function establishedFrom(port: number, client: string): number {
  const remote = `${client
    .split('.')
    .map((p) => Number(p).toString(16).padStart(2, '0').toUpperCase())
    .reverse()
    .join('')}:`;
  const local = `:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  return readFileSync('/proc/net/tcp', 'utf8')
    .split('\n')
    .map((l) => l.trim().split(/\s+/))
    .filter((f) => f.length > 3 && f[1].endsWith(local) && f[2].startsWith(remote) && f[3] === '01').length;
}
