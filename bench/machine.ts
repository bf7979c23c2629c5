// What the figures were measured on: CPU, cores, RAM, OS, Node.js and nginx versions, git commit.
import { execFileSync, spawnSync } from 'node:child_process';
import { cpus, totalmem, release, type as osType } from 'node:os';
import { readFileSync } from 'node:fs';

export interface Machine {
  cpu: string;
  cores: number;
  ramGiB: number;
  os: string;
  node: string;
  nginx: string;
}

function osName(): string {
  try {
    const pretty = /^PRETTY_NAME="?([^"\n]+)"?/m.exec(readFileSync('/etc/os-release', 'utf8'));
    if (pretty) return `${pretty[1]}, ${osType()} ${release()}`;
  } catch {
    // not Linux: fall through
  }
  return `${osType()} ${release()}`;
}

export const NGINX_BIN = '/usr/sbin/nginx';

export function nginxVersion(): string | null {
  const r = spawnSync(NGINX_BIN, ['-v'], { encoding: 'utf8' });
  if (r.error || r.status !== 0) return null;
  return /nginx version: (\S+)/.exec(r.stderr)?.[1] ?? r.stderr.trim();
}

export function machine(): Machine {
  const list = cpus();
  return {
    cpu: list[0]?.model.trim() ?? 'unknown',
    cores: list.length,
    ramGiB: totalmem() / 1024 ** 3,
    os: osName(),
    node: process.version,
    nginx: nginxVersion() ?? 'not installed',
  };
}

/** The commit the code was at, with `+dirty` when the working tree differs from it. */
export function gitCommit(cwd: string): string {
  // Set when the bench runs from an exported snapshot of a commit (no .git there).
  if (process.env.ISOATLAS_BENCH_COMMIT) return process.env.ISOATLAS_BENCH_COMMIT;
  try {
    const git = (...args: string[]) =>
      execFileSync('git', args, { cwd, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const sha = git('rev-parse', '--short=12', 'HEAD');
    const dirty = git('status', '--porcelain', '--untracked-files=no') !== '';
    return dirty ? `${sha}+dirty` : sha;
  } catch {
    return 'unknown';
  }
}
