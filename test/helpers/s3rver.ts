// A real S3-protocol server for tests: s3rver in its own process. Its own process because s3rver's
// list pagination token uses a cipher that OpenSSL 3 only offers with --openssl-legacy-provider, a
// flag we do not want on the test runner itself.
import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export interface S3rverProcess {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startS3rver(buckets: string[]): Promise<S3rverProcess> {
  const dir = mkdtempSync(join(tmpdir(), 'isoatlas-s3rver-'));
  // s3rver with conditional writes, as the local try-out runs it (see bin/local-s3.cjs).
  const script = fileURLToPath(new URL('../../bin/local-s3.cjs', import.meta.url));
  const child: ChildProcess = spawn(process.execPath, ['--openssl-legacy-provider', script, dir, buckets.join(',')], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: fileURLToPath(new URL('../..', import.meta.url)),
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /S3RVER_PORT=(\d+)/.exec(out);
      if (m) resolve(Number(m[1]));
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`s3rver exited ${code}: ${out}`)));
    setTimeout(() => reject(new Error(`s3rver did not start: ${out}`)), 20_000).unref();
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    async stop() {
      child.kill('SIGTERM');
      await new Promise((r) => child.once('exit', r));
      rmSync(dir, { recursive: true, force: true });
    },
  };
}
