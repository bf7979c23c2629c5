// Starts `isoatlas serve` as a child process on a free port for black-box HTTP tests, collects its
// output, and stops it with SIGTERM. Reusable by any suite that needs a real server (API keys, limits…).
import { spawn, type ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { appendTestLog } from './key-scan.js';
import { output, until } from './wait.js';

const ROOT = join(__dirname, '..', '..');
/** The base URL in the server's `listening` line (one JSON object per line), once it is written. */
function listeningBase(stdout: string): string | null {
  // Whole lines only: the last one may still be arriving.
  for (const line of stdout.split('\n').slice(0, -1)) {
    if (!line.includes('"event":"listening"')) continue;
    const url = (JSON.parse(line) as { url: string }).url;
    return url.replace(/\/api\/v1\/$/, '');
  }
  return null;
}
const START_TIMEOUT_MS = 30_000;

export interface RunningServer {
  /** `http://127.0.0.1:PORT` */
  base: string;
  /** `base + '/api/v1'` */
  api: string;
  /** Everything the server wrote to stdout and stderr so far. */
  logs: () => string;
  /** Each stream apart. */
  stdout: () => string;
  stderr: () => string;
  /** Resolves with everything written so far once `test` accepts it: on the server's own output,
   * not a timer (wait.ts). */
  untilLogged: (test: (logs: string) => boolean, what: string) => Promise<string>;
  /** The running child process (e.g. to check it is still alive). */
  child: ChildProcess;
  /** Sends SIGTERM and resolves with the exit code (null when killed by a signal). */
  stop: () => Promise<number | null>;
}

export function startServer(args: {
  dir: string;
  extraArgs?: string[];
  env?: NodeJS.ProcessEnv;
}): Promise<RunningServer> {
  const child = spawn(
    process.execPath,
    [
      join(ROOT, 'bin/isoatlas.mjs'),
      'serve',
      '--dir',
      args.dir,
      '--port',
      '0',
      '--host',
      '127.0.0.1',
      ...(args.extraArgs ?? []),
    ],
    { cwd: ROOT, env: { ...process.env, ...args.env }, stdio: ['ignore', 'pipe', 'pipe'] },
  );
  let stdout = '';
  let stderr = '';
  child.stdout!.setEncoding('utf8');
  child.stderr!.setEncoding('utf8');
  // Everything a server prints also goes to the run's logs, which are scanned for keys at the end.
  child.stdout!.on('data', (chunk: string) => appendTestLog(`serve-${child.pid}.log`, chunk));
  child.stderr!.on('data', (chunk: string) => appendTestLog(`serve-${child.pid}.log`, chunk));

  const exited = new Promise<number | null>((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(child.exitCode);
    else child.once('exit', (code) => resolve(code));
  });

  const stop = async (): Promise<number | null> => {
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
    return exited;
  };

  return new Promise<RunningServer>((resolve, reject) => {
    let settled = false;
    const fail = (why: string) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      reject(new Error(`isoatlas serve ${why}\n--- stderr ---\n${stderr}\n--- stdout ---\n${stdout}`));
    };
    const timer = setTimeout(
      () => fail(`did not log that it is listening within ${START_TIMEOUT_MS / 1000} s`),
      START_TIMEOUT_MS,
    );

    child.stdout!.on('data', (chunk: string) => {
      stdout += chunk;
      const base = settled ? null : listeningBase(stdout);
      if (base) {
        settled = true;
        clearTimeout(timer);
        resolve({
          base,
          api: `${base}/api/v1`,
          logs: () => stdout + stderr,
          stdout: () => stdout,
          stderr: () => stderr,
          untilLogged: (test, what) => until([output(child.stdout!, child.stderr!)], () => stdout + stderr, test, what),
          child,
          stop,
        });
      }
    });
    child.stderr!.on('data', (chunk: string) => (stderr += chunk));
    child.once('error', (err) => fail(`could not be started: ${err.message}`));
    child.once('exit', (code, signal) => fail(`exited before it was ready (code ${code}, signal ${signal})`));
  });
}
