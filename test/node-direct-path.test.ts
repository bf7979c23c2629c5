// The Node adapters' direct path (EdgeRequest in, EdgeResponse's bytes out, no Web Request or
// Response) against the ways the same answers are had otherwise: the node:http adapter's fallback for
// a handler it cannot see into (the handler's Web Response read back), and the handler called with a
// Web Request as the Lambda@Edge adapter and the tests do. On the wire the servers (node:http direct,
// node:http fallback, and the node:net framing of node-net.ts) must send the same status, headers
// and body byte for byte (header order and case aside; the Date header aside), and all must agree
// with the Web Response.
import { afterAll, beforeAll, describe, expect, inject, it, vi } from 'vitest';
import { readdirSync } from 'node:fs';
import { join } from 'node:path';
import net from 'node:net';
import type http from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHandler, directHandlerOf, type Handler } from '../edge/handler.js';
import fc from 'fast-check';
import { createNodeServer } from '../edge/adapters/node-http.js';
import { createNetServer } from '../edge/adapters/node-net.js';
import { originOf, requestUrl } from '../edge/adapters/node-shared.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import { bufferedLog } from '../build/buffered-log.js';
import { validate } from './helpers/schemas.js';

const PRR5 = 'ENSG00000186654';
/** A fixed clock, so the three handlers' rate-limit windows and resets agree to the second. */
const NOW = Date.UTC(2026, 10, 22, 12, 0, 30);
const PER_MINUTE = 30;

function handler(): Handler {
  // Open access with a low per-IP limit: counted on every request (RateLimit-* headers), and the
  // last requests of the sequence are refused 429.
  const access = new AccessControl({ config: resolveAccessConfig({ open: { anonymous_per_ip: { per_minute: PER_MINUTE } } }, 'open'), store: new MemoryQuotaStore(() => NOW), keys: null, secret: null, now: () => NOW });
  return createHandler({ origin: new LocalTreeOrigin(inject('demoTree')), serveStructureFiles: true, access });
}

interface Wire {
  statusLine: string;
  /** `name: value` lines, names lower-cased, sorted; Date left out (it is the time of sending). */
  headers: string[];
  body: Buffer;
}

/** Sends one request as raw bytes and reads the whole answer (the connection is closed after it).
 * Both servers are sent the direct one's Host, so redirects point to the same place. */
function send(port: number, method: string, target: string, headers: Record<string, string | string[]> = {}): Promise<Wire> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('end', () => {
      const raw = Buffer.concat(chunks);
      const end = raw.indexOf('\r\n\r\n');
      const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
      const fields = lines
        .map((l) => `${l.slice(0, l.indexOf(':')).toLowerCase()}:${l.slice(l.indexOf(':') + 1)}`)
        .filter((l) => !l.startsWith('date:'))
        .sort();
      const chunked = fields.includes('transfer-encoding: chunked');
      const body = chunked ? dechunk(raw.subarray(end + 4)) : raw.subarray(end + 4);
      // Framing aside: Node's http server sends a bodiless answer (a redirect) on a closing connection
      // chunked, node-net.ts with Content-Length: 0; the message is the same.
      if (chunked) {
        fields.splice(fields.indexOf('transfer-encoding: chunked'), 1);
        if (!fields.some((l) => l.startsWith('content-length:'))) fields.push(`content-length: ${body.length}`);
        fields.sort();
      }
      resolve({ statusLine, headers: fields, body });
    });
    const lines = [`${method} ${target} HTTP/1.1`, `Host: 127.0.0.1:${directPort}`, 'Connection: close'];
    for (const [name, value] of Object.entries(headers)) for (const v of [value].flat()) lines.push(`${name}: ${v}`);
    socket.write(`${lines.join('\r\n')}\r\n\r\n`); // not end(): a half-closed client gets no answer
  });
}

/** The payload of a chunked body. */
function dechunk(raw: Buffer): Buffer {
  const parts: Buffer[] = [];
  for (let at = 0; ; ) {
    const eol = raw.indexOf('\r\n', at);
    const size = parseInt(raw.subarray(at, eol).toString('latin1'), 16);
    if (!size) return Buffer.concat(parts);
    parts.push(raw.subarray(eol + 2, eol + 2 + size));
    at = eol + 2 + size + 2;
  }
}

function listen(server: http.Server | net.Server): Promise<number> {
  return new Promise((ok) => server.listen(0, '127.0.0.1', () => ok((server.address() as AddressInfo).port)));
}

let direct: http.Server;
let fallback: http.Server;
let framed: net.Server;
let framedPort: number;
let web: Handler;
let directPort: number;
let fallbackPort: number;
let etag: string;
let structure: string;

beforeAll(async () => {
  const h = handler();
  expect(directHandlerOf(h)).toBeTypeOf('function');
  direct = createNodeServer(h);
  const other = handler();
  // A plain function: the adapter cannot see the EdgeResponse behind it, so it reads the Web Response.
  const opaque: Handler = (request, context) => other(request, context);
  expect(directHandlerOf(opaque)).toBeUndefined();
  fallback = createNodeServer(opaque);
  framed = createNetServer(handler());
  web = handler();
  [directPort, fallbackPort, framedPort] = await Promise.all([listen(direct), listen(fallback), listen(framed)]);
  structure = readdirSync(join(inject('demoTree'), 'structures')).find((f) => f.endsWith('.cif'))!.slice(0, -4);
  const first = await web(new Request(`http://x/api/v1/genes/${PRR5}`));
  etag = first.headers.get('etag')!;
  expect(etag).toMatch(/^"[0-9a-f]{64}"$/);
});

afterAll(async () => {
  await Promise.all([direct, fallback, framed].map((s) => new Promise((ok) => s.close(ok))));
});

describe('the direct path answers byte for byte as the Web Response path', () => {
  // The same sequence goes to both servers and to the Web handler, so their counters agree.
  const cases = (): { what: string; method: string; target: string; headers?: Record<string, string | string[]>; status: number }[] => [
    { what: 'gene record', method: 'GET', target: `/api/v1/genes/${PRR5}`, status: 200 },
    { what: 'gene by symbol, HEAD', method: 'HEAD', target: '/api/v1/genes/PRR5', status: 200 },
    { what: 'conditional GET', method: 'GET', target: `/api/v1/genes/${PRR5}`, headers: { 'If-None-Match': etag }, status: 304 },
    { what: 'conditional HEAD', method: 'HEAD', target: `/api/v1/genes/${PRR5}`, headers: { 'If-None-Match': `W/${etag}` }, status: 304 },
    { what: 'If-None-Match sent twice, the second matching', method: 'GET', target: `/api/v1/genes/${PRR5}`, headers: { 'If-None-Match': ['"nope"', etag] }, status: 304 },
    { what: 'stale If-None-Match', method: 'GET', target: `/api/v1/genes/${PRR5}`, headers: { 'if-none-match': '"0000"' }, status: 200 },
    { what: 'isoform by name', method: 'GET', target: '/api/v1/isoforms/PRR5-201', status: 200 },
    { what: 'isoform page limit=10 (sliced)', method: 'GET', target: `/api/v1/genes/${PRR5}/isoforms?limit=10`, status: 200 },
    { what: 'isoform page (file, Link)', method: 'GET', target: `/api/v1/genes/${PRR5}/isoforms`, status: 200 },
    { what: 'neoantigens limit=2', method: 'GET', target: '/api/v1/isoforms/PRR5-201/neoantigens?limit=2', status: 200 },
    { what: 'search', method: 'GET', target: '/api/v1/search?query=PRR5', status: 200 },
    { what: 'search, HEAD', method: 'HEAD', target: '/api/v1/search?query=PRR5&limit=3', status: 200 },
    { what: 'structure redirect', method: 'GET', target: `/api/v1/isoforms/${structure}/structure`, status: 307 },
    { what: 'structure file', method: 'GET', target: `/structures/${structure}.cif`, status: 200 },
    { what: 'ambiguous symbol', method: 'GET', target: '/api/v1/genes/Y_RNA', status: 300 },
    { what: 'unknown gene', method: 'GET', target: '/api/v1/genes/NOPE1', status: 404 },
    { what: 'unknown gene, HEAD', method: 'HEAD', target: '/api/v1/genes/NOPE1', status: 404 },
    { what: 'bad limit', method: 'GET', target: `/api/v1/genes/${PRR5}/isoforms?limit=0`, status: 400 },
    { what: 'bad percent-encoding', method: 'GET', target: '/api/v1/genes/%zz', status: 400 },
    { what: 'dot segments (normalized as a URL)', method: 'GET', target: '/api/v1/x/../genes/PRR5', status: 200 },
    { what: 'no route', method: 'GET', target: '/index.html', status: 404 },
    { what: 'POST', method: 'POST', target: '/api/v1/release', status: 405 },
    { what: 'TRACE', method: 'TRACE', target: '/api/v1/release', status: 405 },
    { what: 'preflight', method: 'OPTIONS', target: '/api/v1/release', headers: { Origin: 'https://example.org', 'Access-Control-Request-Method': 'GET' }, status: 204 },
    { what: 'a Bearer token that is no key', method: 'GET', target: '/api/v1/release', headers: { Authorization: 'Bearer nope' }, status: 401 },
    { what: 'another scheme', method: 'GET', target: '/api/v1/release', headers: { authorization: 'Basic eDp5' }, status: 401 },
    { what: 'target not a path', method: 'GET', target: 'api/v1/release', status: 400 },
  ];

  it('for every kind of answer, each header once', async () => {
    const all = cases();
    // Counted: GET and HEAD of a path without credentials (refusals of methods, targets and keys come first).
    let counted = all.filter((c) => ['GET', 'HEAD'].includes(c.method) && c.target.startsWith('/') && !c.headers?.Authorization && !c.headers?.authorization).length;
    expect(counted).toBeLessThan(PER_MINUTE - 3);
    // Past the per-minute limit: the same requests are refused 429 on every path alike.
    while (counted < PER_MINUTE + 3) all.push({ what: 'up to and over the limit', method: 'GET', target: '/api/v1/release', status: counted++ < PER_MINUTE ? 200 : 429 });
    for (const c of all) {
      const [a, b, f] = await Promise.all([send(directPort, c.method, c.target, c.headers), send(fallbackPort, c.method, c.target, c.headers), send(framedPort, c.method, c.target, c.headers)]);
      const what = `${c.what}: ${c.method} ${c.target}`;
      for (const [other, name] of [[b, 'node:http fallback'], [f, 'node:net']] as const) {
        expect(other.statusLine, `${what} (${name})`).toBe(a.statusLine);
        expect(other.headers, `${what} (${name})`).toEqual(a.headers);
        expect(other.body.equals(a.body), `${what} (${name})`).toBe(true);
      }
      expect(Number(a.statusLine.split(' ')[1]), what).toBe(c.status);
      const names = a.headers.map((l) => l.slice(0, l.indexOf(':')));
      expect(new Set(names).size, `${what}: a header sent twice`).toBe(names.length);
      if (c.what.includes('sliced')) expect(names).toContain('link');

      // The handler with a Web Request (what Lambda@Edge and the tests use) gives the same answer.
      if (!c.target.startsWith('/') || c.method === 'TRACE') continue; // a Web Request cannot carry these
      const headers = new Headers();
      for (const [name, value] of Object.entries(c.headers ?? {})) headers.set(name, [value].flat().join(', '));
      const res = await web(new Request(`http://127.0.0.1:${directPort}${c.target}`, { method: c.method, headers }), { clientIp: '127.0.0.1' });
      expect(res.status, what).toBe(c.status);
      const expected = [...res.headers].map(([name, value]) => `${name}: ${value}`);
      const sent = a.headers.filter((l) => !/^(connection|keep-alive|transfer-encoding):/.test(l) && !(l.startsWith('content-length:') && !res.headers.has('content-length')));
      expect(sent, what).toEqual(expected.sort());
      const body = Buffer.from(await res.arrayBuffer());
      expect(a.body.equals(body), what).toBe(true);
      if (c.method === 'HEAD' || [204, 304, 307].includes(c.status)) expect(a.body.length, what).toBe(0);
    }
  });

});

describe('request URLs', () => {
  // What a Web Request would hold: the target parsed and normalized below the host.
  const reference = (host: string, target: string) => {
    if (!target.startsWith('/')) return null;
    try {
      return new URL(`http://${host}${target}`).href;
    } catch {
      return null;
    }
  };

  it('are what the URL parser makes of host and target, with or without parsing', () => {
    const hosts = ['127.0.0.1:8080', 'Example.ORG', 'example.org:80', '[::1]:3000', 'localhost', 'a-b.c.d:65535'];
    const alphabet = [...`/?.%2eE#'" \\azZ09-_~!$&()*+,;=:@[]|^{}<>\`é\t`, '%2E', '%2e', '/..', '/./', '%41', '%zz', '?x=1&y=2'];
    const target = fc.array(fc.constantFrom(...alphabet), { maxLength: 30 }).map((parts) => parts.join(''));
    fc.assert(
      fc.property(fc.constantFrom(...hosts), fc.oneof(target, target.map((t) => `/${t}`), target.map((t) => `/api/v1/${t}`)), (host, t) => {
        const got = requestUrl(originOf(host)!, t);
        const expected = reference(host, t);
        expect(got?.url ?? null).toBe(expected);
        if (got?.target) expect(got.target).toEqual({ pathname: new URL(expected!).pathname, search: new URL(expected!).search });
      }),
      { numRuns: 20_000 },
    );
    // The targets the benchmark and most clients send take the path without parsing; same answer.
    for (const t of ['/api/v1/genes/ENSG00000099917', '/api/v1/genes/X/isoforms?limit=10', '/api/v1/search?query=MED15%20a', '/api/v1/isoforms/MED15-201', '/api/v1/release?']) {
      const got = requestUrl('http://127.0.0.1:8080', t)!;
      const url = new URL(reference('127.0.0.1:8080', t)!);
      expect(got).toEqual({ url: url.href, target: { pathname: url.pathname, search: url.search } });
    }
  });

  it.each([
    ['node:http', createNodeServer],
    ['node:net', createNetServer],
  ] as const)('a handler that fails is answered 500 with a problem that tells nothing of it, the error logged (%s)', async (_, create) => {
    const errors = vi.spyOn(console, 'error').mockImplementation(() => {});
    const broken: Handler = async () => {
      throw new Error('boom in /srv/secret/tree');
    };
    const server = create(broken);
    const port = await listen(server);
    try {
      for (const method of ['GET', 'HEAD']) {
        const raw = await new Promise<Buffer>((ok, fail) => {
          const socket = net.connect(port, '127.0.0.1');
          const chunks: Buffer[] = [];
          socket.on('data', (d: Buffer) => chunks.push(d));
          socket.on('end', () => ok(Buffer.concat(chunks)));
          socket.on('error', fail);
          socket.write(`${method} /api/v1/release HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`);
        });
        const end = raw.indexOf('\r\n\r\n');
        const head = raw.subarray(0, end).toString('latin1');
        expect(head, method).toMatch(/^HTTP\/1\.1 500 /);
        expect(head.toLowerCase(), method).toContain('content-type: application/problem+json');
        const body = raw.subarray(end + 4).toString('utf8');
        if (method === 'HEAD') expect(body).toBe('');
        else {
          expect(validate('Problem', JSON.parse(body))).toEqual([]);
          expect(body).not.toMatch(/boom|secret/);
        }
      }
      expect(errors.mock.calls.some(([line]) => String(line).includes('boom'))).toBe(true);
    } finally {
      errors.mockRestore();
      await new Promise((ok) => server.close(ok));
    }
  });

  it.each([
    ['node:http', createNodeServer],
    ['node:net', createNetServer],
  ] as const)('a Host the URL parser refuses is replaced by the server\'s own address, not answered 500 (%s)', async (_, create) => {
    const server = create(createHandler({ origin: new LocalTreeOrigin(inject('demoTree')), serveStructureFiles: true }));
    const port = await listen(server);
    try {
      for (const host of ['[', 'a:b:c', '1.2.3.4:99999']) {
        const raw = await new Promise<string>((ok, fail) => {
          const socket = net.connect(port, '127.0.0.1');
          let text = '';
          socket.setEncoding('latin1');
          socket.on('data', (d: string) => (text += d));
          socket.on('end', () => ok(text));
          socket.on('error', fail);
          socket.write(`GET /api/v1/isoforms/PRR5-201/structure HTTP/1.1\r\nHost: ${host}\r\nConnection: close\r\n\r\n`);
        });
        expect(raw.split('\r\n')[0], host).toMatch(/^HTTP\/1\.1 (307|404) /);
        if (raw.startsWith('HTTP/1.1 307')) expect(raw, host).toMatch(new RegExp(`\r\nlocation: http://127\\.0\\.0\\.1:${port}/structures/`, 'i'));
      }
    } finally {
      await new Promise((ok) => server.close(ok));
    }
  });
});

describe('bufferedLog', () => {
  it('writes lines in order, batched, within the interval, and at once on flush()', async () => {
    const writes: string[] = [];
    const log = bufferedLog((text) => writes.push(text), { intervalMs: 30, maxBytes: 1000 });
    log.line('one');
    log.line('two');
    expect(writes).toEqual([]);
    await new Promise((r) => setTimeout(r, 80));
    expect(writes).toEqual(['one\ntwo\n']);
    log.line('three');
    log.flush();
    expect(writes).toEqual(['one\ntwo\n', 'three\n']);
    log.flush(); // nothing pending: nothing written
    expect(writes).toHaveLength(2);
  });

  it('writes as soon as maxBytes are pending', () => {
    const writes: string[] = [];
    const log = bufferedLog((text) => writes.push(text), { intervalMs: 60_000, maxBytes: 20 });
    log.line('0123456789');
    expect(writes).toEqual([]);
    log.line('abcdefghij');
    expect(writes).toEqual(['0123456789\nabcdefghij\n']);
  });
});
