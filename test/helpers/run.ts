// Child processes for tests, waited for without blocking the worker: a synchronous wait (spawnSync)
// holds up the worker's messages to vitest (vitest 3 failed the run when one waited 60 s,
// vitest#8164) and every timer of the test. The result has
// spawnSync's shape with text output, so call sites read as before.
import { spawn } from 'node:child_process';
import { join } from 'node:path';

const CLI = join(__dirname, '../../bin/isoatlas.mjs');

export interface RunResult {
  status: number | null;
  signal: NodeJS.Signals | null;
  stdout: string;
  stderr: string;
  /** Set when the process could not be started, as spawnSync reports it. */
  error?: Error;
}

export interface RunOptions {
  cwd?: string;
  env?: NodeJS.ProcessEnv;
  /** Written to stdin, which is then closed (closed at once without it, as with spawnSync). */
  input?: string;
  /** Milliseconds before the process is sent SIGTERM, as spawnSync's timeout. */
  timeout?: number;
}

export function run(command: string, args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return new Promise((resolve) => {
    const child = spawn(command, args, { cwd: options.cwd, env: options.env, timeout: options.timeout });
    let stdout = '';
    let stderr = '';
    child.stdout.setEncoding('utf8').on('data', (c: string) => (stdout += c));
    child.stderr.setEncoding('utf8').on('data', (c: string) => (stderr += c));
    // A child that exits without reading its input must not fail the test with EPIPE.
    child.stdin.on('error', () => {});
    child.stdin.end(options.input);
    child.once('error', (error) => resolve({ status: null, signal: null, stdout, stderr, error }));
    // 'close': after both streams have been read to their end.
    child.once('close', (status, signal) => resolve({ status, signal, stdout, stderr }));
  });
}

/** bin/isoatlas.mjs run by this Node. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<RunResult> {
  return run(process.execPath, [CLI, ...args], options);
}
