// A fair share through the nginx front (`isoatlas nginx-config`): one address cannot take the
// front's connections from another (idle ones are bounded by worker_connections and the front's
// timeouts, requests in progress per address by limit_conn; a hard cap per address is the firewall
// rule's, test/nginx-firewall.test.ts), and a request is counted once by the server behind it,
// whether nginx answers it from a file or passes it on.
import { describe, expect, inject, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { frontRequests } from './helpers/nginx-front.js';
import { frontsOfSuite } from './helpers/nginx-suite.js';
import { SERVER_LIMITS } from '../edge/adapters/server-limits.js';
import { rawRequest as request } from './helpers/raw-request.js';

const { front, temp } = frontsOfSuite();

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** Waits (bounded) until `done` holds. */
async function until(done: () => boolean, what: string) {
  for (let i = 0; i < 600 && !done(); i++) await sleep(50);
  expect(done(), what).toBe(true);
}

/** Requests of isoforms nginx answers from files. */
const filePaths = async () =>
  [...(await frontRequests(inject('fixtureTree'))).keys()].filter((k) => k.startsWith('/api/v1/isoforms/'));

/** Waits, when less than `ms` is left of the current minute, for the next one (limits count in
 * fixed minute windows). */
async function roomInMinute(ms: number) {
  const left = 60_000 - (Date.now() % 60_000);
  if (left < ms) await sleep(left + 100);
}

describe('connections through the front', () => {
  it('one address holding 1,100 idle connections; another address is answered 10 of 10', async () => {
    // A headers timeout longer than the test: the connections stay held while the other address is
    // served, rather than being cut to make room (test/nginx-timeouts.test.ts has the timeout).
    const long = String(10 * SERVER_LIMITS.requestTimeoutMs);
    const f = await front({
      dir: inject('fixtureTree'),
      env: { ISOATLAS_HEADERS_TIMEOUT_MS: long, ISOATLAS_REQUEST_TIMEOUT_MS: long },
    });
    const { hostname, port } = new URL(f.base);
    const held: net.Socket[] = [];
    try {
      let connected = 0;
      for (let i = 0; i < 1_100; i++) {
        const socket = net.connect({ host: hostname, port: Number(port), localAddress: '127.0.0.2' });
        socket.on('error', () => {});
        socket.once('connect', () => connected++);
        held.push(socket);
      }
      await until(() => connected === held.length, 'all 1,100 connected');
      const [file] = await filePaths();
      const answers = [];
      for (let i = 0; i < 10; i++)
        answers.push((await request(f.base, i % 2 ? file : '/api/v1/genes/PRR5', { from: '127.0.0.3' })).status);
      expect(answers).toEqual(Array(10).fill(200));
      expect(held.filter((s) => s.destroyed)).toHaveLength(0);
    } finally {
      for (const s of held) s.destroy();
    }
  });

  it(`lets one address have ${SERVER_LIMITS.maxConnectionsPerAddress} requests in progress, answers one more 429 problem+json, and serves another address meanwhile`, async () => {
    // The server behind the front, replaced by one that holds the requests asked to wait.
    const waiting: http.ServerResponse[] = [];
    const upstream = http.createServer((req, res) => {
      if (req.url?.includes('query=wait')) return void waiting.push(res);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
    await new Promise<void>((ok) => upstream.listen(0, '127.0.0.1', ok));
    const address = `127.0.0.1:${(upstream.address() as net.AddressInfo).port}`;
    try {
      const f = await front({
        dir: inject('fixtureTree'),
        editConfig: (text) => text.replace(/(upstream isoatlas_server \{\n\s+server )\S+;/, `$1${address};`),
      });
      const cap = SERVER_LIMITS.maxConnectionsPerAddress;
      const held = Array.from({ length: cap }, (_, i) =>
        request(f.base, `/api/v1/search?query=wait${i}`, { from: '127.0.0.2' }),
      );
      await until(() => waiting.length === cap, `${cap} requests in progress`);
      const over = await request(f.base, '/api/v1/search?query=wait-over', { from: '127.0.0.2' });
      expect(over.status).toBe(429);
      expect(over.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      expect(Number(over.headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(over.text)).toMatchObject({
        status: 429,
        detail: expect.stringContaining(`at most ${cap} at once`),
      });
      expect(waiting).toHaveLength(cap); // it never reached the server
      expect((await request(f.base, '/api/v1/search?query=other', { from: '127.0.0.3' })).status).toBe(200);
      // Once the address's requests are answered, it is served again.
      for (const res of waiting.splice(0)) res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      expect((await Promise.all(held)).map((r) => r.status)).toEqual(Array(cap).fill(200));
      expect((await request(f.base, '/api/v1/search?query=again', { from: '127.0.0.2' })).status).toBe(200);
    } finally {
      for (const res of waiting) res.destroy();
      upstream.closeAllConnections();
      upstream.close();
    }
  });
});

describe('counting through the front', () => {
  it('counts a refused request once, whether it is asked for a file or passed on (B without a key, A with a bad key)', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-nginx-fair-'));
    temp.push(dir);
    const budget = 4;
    writeFileSync(
      join(dir, 'access.json'),
      JSON.stringify({
        open: { anonymous_per_ip: { per_minute: budget } },
        key_required: { per_ip: { per_minute: budget } },
      }),
    );
    for (const [mode, headers] of [
      ['key-required', {}],
      ['open', { Authorization: 'Bearer garbage' }],
    ] as const) {
      const f = await front({
        dir: inject('fixtureTree'),
        serverArgs: ['--access', mode, '--access-config', join(dir, 'access.json'), '--keys-dir', join(dir, 'keys')],
      });
      const [file] = await filePaths();
      await roomInMinute(15_000);
      for (const [from, path] of [
        ['127.0.0.2', file],
        ['127.0.0.3', '/api/v1/genes/PRR5'],
      ]) {
        const statuses = [];
        for (let i = 0; i <= budget; i++) statuses.push((await request(f.base, path, { from, headers })).status);
        expect(statuses, `${mode} ${path}`).toEqual([...Array(budget).fill(401), 429]);
      }
    }
  });
});
