// S3 and HTTP failures as the CLI reports them: each names the operation, the bucket and key or the
// URL, the endpoint and what to do, exits 4 (2 for a malformed --endpoint), and no SDK warning
// precedes it. Against a real s3rver, a closed port and an environment without credentials.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { spawn } from 'node:child_process';
import { freePort } from './helpers/ports.js';
import { join } from 'node:path';
import { startS3rver, type S3rverProcess } from './helpers/s3rver.js';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { StorageError } from '../build/common/storage-errors.js';

const ROOT = join(__dirname, '..');
const CREDS = { AWS_ACCESS_KEY_ID: 'S3RVER', AWS_SECRET_ACCESS_KEY: 'S3RVER' };

function cli(args: string[], env: NodeJS.ProcessEnv): Promise<{ code: number | null; stderr: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], {
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (d) => (stderr += d));
    child.on('exit', (code) => resolve({ code, stderr }));
  });
}

/** The environment without any AWS credentials or SDK switches the test runner may have. */
function cleanEnv(extra: NodeJS.ProcessEnv = {}): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [k, v] of Object.entries(process.env)) if (!k.startsWith('AWS_')) env[k] = v;
  return {
    ...env,
    AWS_SHARED_CREDENTIALS_FILE: '/nonexistent/credentials',
    AWS_CONFIG_FILE: '/nonexistent/config',
    AWS_EC2_METADATA_DISABLED: 'true',
    ...extra,
  };
}

let s3: S3rverProcess;
beforeAll(async () => {
  s3 = await startS3rver(['atlas']);
}, 60_000);
afterAll(() => s3?.stop());

describe('storage failures explain themselves', () => {
  const tree = () => inject('fixtureTree');

  it('a bare host:port for --endpoint is a usage error that shows the URL to write', async () => {
    const r = await cli(
      ['publish', '--dir', tree(), '--bucket', 'atlas', '--endpoint', '127.0.0.1:18510'],
      cleanEnv(CREDS),
    );
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      '--endpoint 127.0.0.1:18510 is not an http(s) URL: write it with its scheme, e.g. http://127.0.0.1:18510',
    );
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
    expect(r.stderr).toMatch(
      new RegExp(
        `GetObjectCommand s3://no-such-bucket/\\S* at ${s3.endpoint} failed: bucket no-such-bucket does not exist there`,
      ),
    );
    expect(r.stderr).not.toMatch(/NodeVersionSupportWarning|upgrade to node/);
  });

  it('an endpoint nobody listens on is unreachable, said so with its code', async () => {
    const port = await freePort();
    const r = await cli(['releases', '--bucket', 'atlas', '--endpoint', `http://127.0.0.1:${port}`], cleanEnv(CREDS));
    expect(r.code).toBe(4);
    expect(r.stderr).toContain(`at http://127.0.0.1:${port} failed: cannot reach the endpoint (ECONNREFUSED)`);
  }, 60_000);

  describe('a mirror whose source cannot be reached names the source, the endpoint, the cause and what to do (exit 4)', () => {
    let plain: Server;
    let plainPort: number;
    let to: string;
    beforeAll(async () => {
      // A plain HTTP server: asked in TLS (https://), the handshake fails.
      plain = createServer((_, res) => res.end('plain'));
      await new Promise<void>((ok) => plain.listen(0, '127.0.0.1', ok));
      plainPort = (plain.address() as AddressInfo).port;
      to = mkdtempSync(join(tmpdir(), 'isoatlas-mirror-down-'));
    });
    afterAll(() => {
      plain.close();
      rmSync(to, { recursive: true, force: true });
    });

    const cases: [string, () => Promise<string[]>, RegExp][] = [
      [
        'http, connection refused',
        async () => ['--from', `http://127.0.0.1:${await freePort()}/`],
        /cannot read the source http:\/\/127\.0\.0\.1:(\d+)\/: connection refused \(ECONNREFUSED\): nothing listens there \(http:\/\/127\.0\.0\.1:\1\/current\.json: .*\)\. To fix: start the source, or correct the host and port in --from/,
      ],
      [
        's3, connection refused',
        async () => ['--from', 's3://atlas/p', '--endpoint', `http://127.0.0.1:${await freePort()}`],
        /cannot read the source s3:\/\/atlas\/p at http:\/\/127\.0\.0\.1:\d+: connection refused \(ECONNREFUSED\).*To fix: start the source, or correct the host and port in --endpoint/,
      ],
      [
        'http, host name not found',
        async () => ['--from', 'http://no-such-host.invalid/atlas'],
        /cannot read the source http:\/\/no-such-host\.invalid\/atlas: host name not found \((ENOTFOUND|EAI_AGAIN)\).*To fix: correct the host name in --from/,
      ],
      [
        's3, host name not found',
        async () => ['--from', 's3://atlas', '--endpoint', 'http://no-such-host.invalid:9000'],
        /cannot read the source s3:\/\/atlas at http:\/\/no-such-host\.invalid:9000: host name not found \((ENOTFOUND|EAI_AGAIN)\).*in --endpoint/,
      ],
      [
        'http, TLS to a plain server',
        async () => ['--from', `https://127.0.0.1:${plainPort}/`],
        /cannot read the source https:\/\/127\.0\.0\.1:\d+\/: TLS failed \(\w+\).*To fix: write http:\/\/ in --from for a source that serves plain HTTP/,
      ],
      [
        's3, TLS to a plain server',
        async () => ['--from', 's3://atlas', '--endpoint', `https://127.0.0.1:${plainPort}`],
        /cannot read the source s3:\/\/atlas at https:\/\/127\.0\.0\.1:\d+: TLS failed \(\w+\).*write http:\/\/ in --endpoint/,
      ],
    ];
    for (const [name, args, message] of cases) {
      it(name, async () => {
        const r = await cli(['mirror', ...(await args()), '--to', join(to, 'm')], cleanEnv(CREDS));
        expect(r.stderr).toMatch(new RegExp(`^isoatlas: ${message.source}`));
        expect(r.code).toBe(4);
        expect(r.stderr).not.toMatch(/: Error\b/);
      }, 60_000);
    }

    it('a source that accepts the connection and never answers: no answer in time, for http and s3', async () => {
      const silent = createServer(() => {});
      await new Promise<void>((ok) => silent.listen(0, '127.0.0.1', ok));
      const port = (silent.address() as AddressInfo).port;
      const { mirror } = await import('../edge/mirror/mirror.js');
      try {
        for (const source of [
          { from: `http://127.0.0.1:${port}/` },
          { from: 's3://atlas', endpoint: `http://127.0.0.1:${port}`, region: 'us-east-1' },
        ]) {
          Object.assign(process.env, CREDS);
          const err = await mirror({ ...source, to: join(to, 'silent'), progress: false, requestTimeoutMs: 300 }).catch(
            (e: Error) => e,
          );
          expect(err).toBeInstanceOf(StorageError);
          expect((err as Error).message).toMatch(
            /: no answer in time \(.*current\.json: no answer within 300 ms\)\. To fix: the source or the network is slow or down/,
          );
        }
      } finally {
        silent.closeAllConnections();
        silent.close();
      }
    }, 60_000);
  });
});
