// Starts Debian's nginx with the config `isoatlas nginx-config` writes, in front of an `isoatlas serve`
// started for it (trusting nginx's address), for black-box tests through the front. Everything lives
// in a temporary directory (edge/server/nginx-config.ts standaloneNginx): nginx's main config, which
// includes the generated one, its pid, temporary files and logs.
import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import net from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from './server.js';
import { appendTestLog } from './key-scan.js';
import { run, runCli } from './run.js';
import { forEachFrontFile, standaloneNginx } from '../../edge/server/nginx-config.js';
import { freePort } from './ports.js';
import { changesOf, output, until } from './wait.js';

const ROOT = join(__dirname, '..', '..');
export const NGINX = '/usr/sbin/nginx';

export interface RunningFront extends RunningServer {
  /** The `isoatlas serve` behind nginx. */
  server: RunningServer;
  /** The log lines nginx writes for the answers it gives itself. */
  frontLog: () => string;
  /** Resolves with frontLog once `test` accepts it, on nginx's writes to it (wait.ts). */
  untilFrontLogged: (test: (log: string) => boolean, what: string) => Promise<string>;
  /** nginx's error log. */
  errorLog: () => string;
  /** The generated config, as nginx runs it. */
  config: string;
}

async function untilListening(port: number, child: ChildProcess, why: () => string): Promise<void> {
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (child.exitCode !== null) throw new Error(`nginx exited with code ${child.exitCode}\n${why()}`);
    const up = await new Promise<boolean>((resolve) => {
      const socket = net.connect(port, '127.0.0.1');
      socket.once('connect', () => (socket.destroy(), resolve(true)));
      socket.once('error', () => resolve(false));
    });
    if (up) return;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`nginx did not listen on ${port} within 30 s\n${why()}`);
}

/** The server's arrangement and limits among its arguments, which nginx-config takes too. */
function accessArgs(serverArgs: string[]): string[] {
  return serverArgs.flatMap((arg, i) =>
    ['--access', '--access-config'].includes(arg) ? [arg, serverArgs[i + 1]] : [],
  );
}

/** `env`: for the server and nginx-config alike (the ISOATLAS_* limits both read). `editConfig`
 * changes the generated config before nginx reads it (to test what a stale one does).
 * `compressedDir`: where nginx-config keeps its compressed copies (default beside `dir`); a mirror of
 * the demo tree can share the tree's, whose files are the same. */
export async function startNginxFront(args: {
  dir: string;
  serverArgs?: string[];
  env?: NodeJS.ProcessEnv;
  editConfig?: (text: string) => string;
  compressedDir?: string;
}): Promise<RunningFront> {
  if (!existsSync(NGINX))
    throw new Error(`Debian's nginx is not installed (no ${NGINX}): apt-get install nginx (.ci/run does)`);
  const work = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-'));
  const server = await startServer({
    dir: args.dir,
    extraArgs: ['--trust-proxy', '127.0.0.1', ...(args.serverArgs ?? [])],
    env: args.env,
  });
  try {
    const port = await freePort();
    const frontLogFile = join(work, 'front.log');
    const configFile = join(work, 'isoatlas.conf');
    const generated = await runCli(
      [
        'nginx-config',
        '--dir',
        args.dir,
        '--upstream',
        new URL(server.base).host,
        '--listen',
        `127.0.0.1:${port}`,
        '--access-log',
        frontLogFile,
        '--out',
        configFile,
        '--cache-dir',
        join(work, 'cache'),
        ...(args.compressedDir ? ['--compressed-dir', args.compressedDir] : []),
        ...accessArgs(args.serverArgs ?? []),
      ],
      { cwd: ROOT, env: { ...process.env, ...args.env } },
    );
    if (generated.status !== 0)
      throw new Error(`isoatlas nginx-config failed (${generated.status}): ${generated.stderr}`);
    if (args.editConfig) writeFileSync(configFile, args.editConfig(readFileSync(configFile, 'utf8')));
    const { args: nginxArgs, errorLog: errorLogFile } = standaloneNginx(work, configFile);
    // What an operator runs before reloading: the config as generated (or edited) must pass.
    const checked = await run(NGINX, [...nginxArgs, '-t']);
    if (checked.status !== 0) throw new Error(`nginx -t refused the front's config:\n${checked.stderr}`);
    const child = spawn(NGINX, [...nginxArgs, '-g', 'daemon off;'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let nginxOutput = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => (nginxOutput += c));
    child.stderr!.setEncoding('utf8').on('data', (c: string) => (nginxOutput += c));
    const errorLog = () => (existsSync(errorLogFile) ? readFileSync(errorLogFile, 'utf8') : '');
    await untilListening(port, child, () => `${nginxOutput}\n${errorLog()}`);
    const exited = new Promise<void>((resolve) =>
      child.exitCode !== null ? resolve() : child.once('exit', () => resolve()),
    );
    const frontLog = () => (existsSync(frontLogFile) ? readFileSync(frontLogFile, 'utf8') : '');
    const logs = () => `${server.logs()}\n${frontLog()}`;
    const base = `http://127.0.0.1:${port}`;
    return {
      base,
      api: `${base}/api/v1`,
      server,
      child,
      config: readFileSync(configFile, 'utf8'),
      frontLog,
      untilFrontLogged: (test, what) => until([changesOf(frontLogFile)], frontLog, test, what),
      errorLog,
      logs,
      // The server's own streams; nginx's lines are in frontLog.
      stdout: server.stdout,
      stderr: server.stderr,
      // Either may write the line awaited: the server to its output, nginx to its log.
      untilLogged: (test, what) =>
        until([output(server.child.stdout!, server.child.stderr!), changesOf(frontLogFile)], logs, test, what),
      async stop() {
        child.kill('SIGQUIT'); // graceful: finish in-flight requests
        await exited;
        appendTestLog(`nginx-${port}.log`, `${frontLog()}\n${errorLog()}`);
        const code = await server.stop();
        rmSync(work, { recursive: true, force: true });
        return code;
      },
    };
  } catch (err) {
    await server.stop();
    rmSync(work, { recursive: true, force: true });
    throw err;
  }
}

/** The requests nginx may answer from a file of the release `dir` serves, each by its canonical id:
 * the kind of file and its sha256 (the server names the file at admission; the config lists none). */
export async function frontRequests(dir: string): Promise<Map<string, { kind: 'json' | 'mmcif'; sha256: string }>> {
  const requests = new Map<string, { kind: 'json' | 'mmcif'; sha256: string }>();
  await forEachFrontFile(dir, (entry, uris) => {
    const kind = entry.path.endsWith('.cif') ? 'mmcif' : 'json';
    for (const uri of uris) requests.set(uri, { kind, sha256: entry.sha256 });
  });
  return requests;
}
