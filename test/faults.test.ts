// Faults behind the edge: the origin answers errors, resets, garbage or nothing at all. The edge must keep answering, within bounded time, with
// the documented status: 502 (bad answer, reset, refused), 503 (origin busy), 504 (timeout), each a
// problem+json with Retry-After; and never hang or answer 500.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { S3Client } from '@aws-sdk/client-s3';
import { createHandler, type Handler } from '../edge/handler.js';
import { HttpOrigin } from '../edge/origins/http-origin.js';
import { S3RawOrigin } from '../edge/origins/s3.js';
import { validate } from './helpers/schemas.js';

async function expectProblem(response: Response, status: number) {
  expect(response.status).toBe(status);
  expect(response.headers.get('Content-Type')).toMatch(/^application\/problem\+json/);
  expect(response.headers.get('Retry-After')).toBe('5');
  const body = (await response.json()) as { status: number; detail: string };
  expect(validate('Problem', body)).toEqual([]);
  expect(body.status).toBe(status);
  return body;
}

// ---------------------------------------------------------------------------------------------------
// The origin fails.

type Mode = 'ok' | '500' | '503' | '429' | 'reset' | 'silent' | 'cut-body' | 'slow-body' | 'garbage';

describe('the origin fails', () => {
  let server: http.Server;
  let base: string;
  let mode: Mode = 'ok';
  const sockets = new Set<Socket>();
  const TIMEOUT_MS = 600;

  beforeAll(async () => {
    const tree = inject('fixtureTree');
    server = http.createServer((req, res) => {
      // S3 requests carry the bucket as the first path segment.
      const path = decodeURIComponent(new URL(req.url!, 'http://x').pathname).replace(/^\/(bucket\/)?/, '');
      switch (mode) {
        case 'ok': {
          let body: Buffer;
          try {
            body = readFileSync(join(tree, path));
          } catch {
            res.writeHead(404).end();
            return;
          }
          res.writeHead(200, { 'Content-Length': body.length, 'Content-Type': 'application/json' }).end(body);
          return;
        }
        case '500':
        case '503':
        case '429':
          res.writeHead(Number(mode), { 'Content-Type': 'text/plain' }).end('no');
          return;
        case 'reset':
          req.socket.destroy();
          return;
        case 'silent':
          return; // never answers
        case 'cut-body':
          res.writeHead(200, { 'Content-Length': 100_000 });
          res.write('{"release":');
          setTimeout(() => req.socket.destroy(), 20);
          return;
        case 'slow-body':
          res.writeHead(200, { 'Content-Length': 100_000 });
          res.write('{"release":'); // and nothing more
          return;
        case 'garbage':
          req.socket.end('SSH-2.0-OpenSSH_9.0\r\n\r\n');
          return;
      }
    });
    server.on('connection', (s) => {
      sockets.add(s);
      s.on('close', () => sockets.delete(s));
    });
    await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
  });
  afterAll(async () => {
    for (const s of sockets) s.destroy();
    await new Promise((ok) => server.close(ok));
  });

  const cases: [Mode, number][] = [
    ['500', 502],
    ['garbage', 502],
    ['reset', 502],
    ['cut-body', 502],
    ['503', 503],
    ['429', 503],
    ['silent', 504],
    ['slow-body', 504],
  ];

  function origins(): [string, Handler][] {
    const s3 = new S3Client({
      endpoint: base,
      forcePathStyle: true,
      region: 'us-east-1',
      credentials: { accessKeyId: 'x', secretAccessKey: 'x' },
      maxAttempts: 1,
    });
    return [
      ['HttpOrigin', createHandler({ origin: new HttpOrigin(base, TIMEOUT_MS) })],
      ['S3RawOrigin', createHandler({ origin: new S3RawOrigin(s3, 'bucket', '', TIMEOUT_MS) })],
    ];
  }

  const get = (handler: Handler, path: string) => handler(new Request(`http://x/api/v1${path}`));

  it.each(cases)(
    'origin fault %s → %i with problem+json and Retry-After, within the time budget, through HTTP and S3 origins',
    async (fault, status) => {
      for (const [name, handler] of origins()) {
        // Healthy first: the manifest is loaded and release.json verified (and kept in memory).
        mode = 'ok';
        expect((await get(handler, '/release')).status, `${name} healthy`).toBe(200);

        // A file this handler has not read yet, while the origin fails.
        mode = fault;
        const started = performance.now();
        const response = await get(handler, '/genes/PRR5');
        const elapsed = performance.now() - started;
        expect(response.status, `${name} under ${fault}`).toBe(status);
        const body = await expectProblem(response, status);
        expect(body.detail).not.toContain('127.0.0.1'); // internals stay in the log
        expect(elapsed, `${name} under ${fault}`).toBeLessThan(TIMEOUT_MS + 1_000);

        // The failure is not remembered: the same file is served once the origin is back.
        mode = 'ok';
        expect((await get(handler, '/genes/PRR5')).status, `${name} after ${fault}`).toBe(200);
      }
    },
  );

  it.each(cases)('origin fault %s before anything was read (the manifest itself) → %i', async (fault, status) => {
    for (const [name, handler] of origins()) {
      mode = fault;
      const response = await get(handler, '/release');
      expect(response.status, `${name} under ${fault}`).toBe(status);
      await expectProblem(response, status);
      mode = 'ok';
      expect((await get(handler, '/release')).status, `${name} after ${fault}`).toBe(200);
    }
  });

  it('answers 502 when the origin refuses connections', async () => {
    const closed = http.createServer();
    await new Promise<void>((ok) => closed.listen(0, '127.0.0.1', ok));
    const port = (closed.address() as AddressInfo).port;
    await new Promise((ok) => closed.close(ok));
    const handler = createHandler({ origin: new HttpOrigin(`http://127.0.0.1:${port}/`, TIMEOUT_MS) });
    await expectProblem(await handler(new Request('http://x/api/v1/release')), 502);
  });
});
