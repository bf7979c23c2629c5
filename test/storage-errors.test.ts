// S3 and HTTP failures as the CLI reports them: each names the operation, the bucket and key or the
// URL, the endpoint and what to do, exits 4 (2 for a malformed --endpoint), and no SDK warning
// precedes it. Against a real s3rver, a closed port and an environment without credentials.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { freePort } from './helpers/ports.js';
import { join } from 'node:path';
import { startS3rver, type S3rverProcess } from './helpers/s3rver.js';

const ROOT = join(__dirname, '..');
const CREDS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], { env, stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** The environment without any AWS credentials or SDK switches the test runner may have. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_')) env[k] = v;
  return { ...env, AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials', AWS_CONFIG_FILE: '/nonexistent/config', AWS_EC2_METADATA_DISABLED: 'true', ...extra };
}


let s3: S3rverProcess;
beforeAll(async () => {
  s3 = await startS3rver(['atlas']);
}, 60_000);
afterAll(() => s3?.stop());

describe('storage failures explain themselves', () => {
  const tree = () => inject('demoTree');

  it('a bare host:port for --endpoint is a usage error that shows the URL to write', async () => {
    const r = await cli(['publish', '--dir', tree(), '--bucket', 'atlas', '--endpoint', '127.0.0.1:18510'], cleanEnv(CREDS));
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('--endpoint 127.0.0.1:18510 is not an http(s) URL: write it with its scheme, e.g. http://127.0.0.1:18510');
  });

  it('missing credentials say which variables to set, with no SDK warning first', async () => {
    const r = await cli(['releases', '--bucket', 'atlas', '--endpoint', s3.endpoint], cleanEnv());
    expect(r.code).toBe(4);
    expect(r.stderr).toContain('no AWS credentials');
    expect(r.stderr).toContain('set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY');
    expect(r.stderr).not.toMatch(/NodeVersionSupportWarning|upgrade to node/);
  });

  it('a missing bucket is named with the operation, key and endpoint', async () => {
    const r = await cli(['releases', '--bucket', 'no-such-bucket', '--endpoint', s3.endpoint], cleanEnv(CREDS));
    expect(r.code).toBe(4);
    expect(r.stderr).toMatch(new RegExp(`GetObjectCommand s3://no-such-bucket/\\S* at ${s3.endpoint} failed: bucket no-such-bucket does not exist there`));
    expect(r.stderr).not.toMatch(/NodeVersionSupportWarning|upgrade to node/);
  });

  it('an endpoint nobody listens on is unreachable, said so with its code', async () => {
    const port = await freePort();
    const r = await cli(['releases', '--bucket', 'atlas', '--endpoint', `http://127.0.0.1:${port}`], cleanEnv(CREDS));
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`at http://127.0.0.1:${port} failed: cannot reach the endpoint (ECONNREFUSED)`);
  }, 60_000);

  it('a mirror whose HTTP source is down says which URL and why, not just "fetch failed"', async () => {
    const port = await freePort();
    const { mkdtempSync, rmSync } = await import('node:fs');
    const { tmpdir } = await import('node:os');
    const to = mkdtempSync(join(tmpdir(), 'isoatlas-mirror-down-'));
    try {
      const r = await cli(['mirror', '--from', `http://127.0.0.1:${port}/`, '--to', join(to, 'm')], cleanEnv());
      expect(r.code).toBe(4);
      expect(r.stderr).toContain(`cannot read the source: http://127.0.0.1:${port}/`);
      expect(r.stderr).toContain('ECONNREFUSED');
    } finally {
      rmSync(to, { recursive: true, force: true });
    }
  }, 60_000);
});
