// s3rver (a real S3-protocol server) in its own process for the publish benchmark, storing into a
// directory of the bench's scratch space. Like test/helpers/s3rver.ts, but stopping it does not
// delete its files on the spot: the scratch directory goes at the end of the run. The timed runs use
// it with conditional writes (bin/local-s3.cjs), which publish requires; the probe of s3rver's own
// behaviour uses it plain.
import { spawn } from 'node:child_process';
import { mkdirSync } from 'node:fs';
import { join } from 'node:path';
import { ROOT } from './context.js';

export interface S3rverProcess {
  endpoint: string;
  stop(): Promise<void>;
}

export async function startS3rver(
  dir: string,
  buckets: string[],
  o: { conditionalWrites?: boolean } = {},
): Promise<S3rverProcess> {
  mkdirSync(dir, { recursive: true });
  const script = `
    const S3rver = require('s3rver');
    new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory: ${JSON.stringify(dir)}, allowMismatchedSignatures: true,
      configureBuckets: ${JSON.stringify(buckets.map((name) => ({ name, configs: [] })))} })
      .run().then((a) => console.log('S3RVER_PORT=' + a.port));`;
  // --openssl-legacy-provider: s3rver's list pagination token uses a cipher OpenSSL 3 only offers so.
  const args = o.conditionalWrites ? [join(ROOT, 'bin/local-s3.cjs'), dir, buckets.join(',')] : ['-e', script];
  const child = spawn(process.execPath, ['--openssl-legacy-provider', ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    cwd: ROOT,
  });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`s3rver did not start: ${out}`)), 20_000);
    child.stdout!.on('data', (d) => {
      out += d;
      const m = /S3RVER_PORT=(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    });
    child.stderr!.on('data', (d) => (out += d));
    child.once('exit', (code) => reject(new Error(`s3rver exited ${code}: ${out}`)));
  });
  return {
    endpoint: `http://127.0.0.1:${port}`,
    stop: () =>
      new Promise((ok) => {
        if (child.exitCode !== null || child.signalCode !== null) return ok();
        child.once('exit', () => ok());
        child.kill('SIGTERM');
      }),
  };
}
