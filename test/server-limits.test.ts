// What a slow or oversized client can hold on the local server (`isoatlas serve`, on Node's http
// server): the real CLI server on loopback with short limits from the ISOATLAS_* environment variables (SERVER_LIMIT_ENV),
// driven by raw sockets so the test controls every byte and its timing.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import net from 'node:net';
import { startServer, type RunningServer } from './helpers/server.js';
import { SERVER_LIMITS, SERVER_LIMIT_ENV, serverLimits } from '../edge/adapters/server-limits.js';
import { validate } from './helpers/schemas.js';

const LIMITS = {
  maxHeaderSize: 4096,
  headersTimeoutMs: 2_000,
  requestTimeoutMs: 3_000,
  keepAliveTimeoutMs: 1_000,
  maxRequestsPerSocket: 3,
};
/** Node checks the timeouts every headersTimeout / 4; allow that and a busy machine's scheduling (a
 * shared CI machine running other suites): still far below Node's own defaults, which these replace. */
const SLACK_MS = LIMITS.headersTimeoutMs / 4 + 5_000;

let server: RunningServer;
let port: number;

interface Conversation {
  socket: net.Socket;
  /** Everything the server has sent so far. */
  received: () => string;
  /** Resolves when the server closes the connection, with the time since `opened` in ms. */
  closed: Promise<number>;
  opened: number;
}

function connect(): Promise<Conversation> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let received = '';
    const opened = performance.now();
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (received += d));
    const closed = new Promise<number>((ok) => socket.on('close', () => ok(performance.now() - opened)));
    socket.on('error', () => {}); // a reset is one way of being disconnected
    socket.once('connect', () => resolve({ socket, received: () => received, closed, opened }));
    socket.once('error', reject);
  });
}

/** Status, headers and problem body of the first response in `raw`. */
function parse(raw: string) {
  const end = raw.indexOf('\r\n\r\n');
  const [statusLine, ...lines] = raw.slice(0, end).split('\r\n');
  const headers = Object.fromEntries(
    lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
  );
  const length = Number(headers['content-length'] ?? 0);
  const body = Buffer.from(raw.slice(end + 4), 'latin1')
    .subarray(0, length)
    .toString('utf8');
  return { status: Number(statusLine.split(' ')[1]), headers, body };
}

function expectProblem(raw: string, status: number) {
  const res = parse(raw);
  expect(res.status).toBe(status);
  expect(res.headers['content-type']).toMatch(/^application\/problem\+json/);
  expect(res.headers.connection).toBe('close');
  const body = JSON.parse(res.body) as { status: number; detail: string };
  expect(validate('Problem', body)).toEqual([]);
  expect(body.status).toBe(status);
  return body;
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

describe('limits from the environment', () => {
  it('reads every ISOATLAS_* override and refuses nonsense', () => {
    const env = Object.fromEntries(Object.entries(SERVER_LIMIT_ENV).map(([, name], i) => [name, String(5_000 + i)]));
    const limits = serverLimits(env);
    expect(Object.values(limits)).toEqual(Object.keys(SERVER_LIMIT_ENV).map((_, i) => 5_000 + i));
    expect(() => serverLimits({ ISOATLAS_HEADERS_TIMEOUT_MS: '1.5' })).toThrow(
      /ISOATLAS_HEADERS_TIMEOUT_MS must be a positive integer/,
    );
    expect(() => serverLimits({ ISOATLAS_REQUEST_TIMEOUT_MS: '0' })).toThrow(/positive integer/);
    expect(() => serverLimits({ ISOATLAS_HEADERS_TIMEOUT_MS: '60000' })).toThrow(/cannot exceed the request timeout/);
  });
});

describe('isoatlas serve', () => {
  beforeAll(async () => {
    const env = Object.fromEntries(
      Object.entries(LIMITS).map(([field, value]) => [SERVER_LIMIT_ENV[field as keyof typeof LIMITS], String(value)]),
    );
    server = await startServer({ dir: inject('fixtureTree'), env });
    port = Number(new URL(server.base).port);
  });
  afterAll(async () => {
    await server.stop();
  });

  describe('size of the request head', () => {
    it('answers 431 with a problem to a request line longer than the limit', async () => {
      const c = await connect();
      c.socket.write(`GET /api/v1/genes/${'A'.repeat(LIMITS.maxHeaderSize)} HTTP/1.1\r\nHost: x\r\n\r\n`);
      await c.closed;
      const body = expectProblem(c.received(), 431);
      expect(body.detail).toContain(`${LIMITS.maxHeaderSize} bytes`);
    });

    it('answers 431 to headers larger than the limit, and serves a request just within it', async () => {
      const c = await connect();
      c.socket.write(
        `GET /api/v1/release HTTP/1.1\r\nHost: x\r\nX-Padding: ${'p'.repeat(LIMITS.maxHeaderSize)}\r\n\r\n`,
      );
      await c.closed;
      expectProblem(c.received(), 431);

      const ok = await fetch(`${server.api}/release`, {
        headers: { 'X-Padding': 'p'.repeat(LIMITS.maxHeaderSize - 400) },
      });
      expect(ok.status).toBe(200);
    });

    it('answers 400 with a problem to a request line that is not HTTP, dated like every answer', async () => {
      const c = await connect();
      c.socket.write('GET api/v1/release HTTP/1.1\r\nHost: x\r\n\r\n');
      await c.closed;
      expectProblem(c.received(), 400);
      expect(Number.isNaN(Date.parse(parse(c.received()).headers.date))).toBe(false);
    });
  });

  describe('Host', () => {
    it('answers 400 to an HTTP/1.1 request without Host, and to one with two', async () => {
      for (const head of [
        'GET /api/v1/release HTTP/1.1\r\n\r\n',
        'GET /api/v1/release HTTP/1.1\r\nHost: a.example\r\nHost: b.example\r\n\r\n',
      ]) {
        const c = await connect();
        c.socket.write(head);
        await c.closed;
        const body = expectProblem(c.received(), 400);
        expect(body.detail).toMatch(/Host/);
      }
    });

    it('serves an HTTP/1.0 request without Host', async () => {
      const c = await connect();
      c.socket.write('GET /api/v1/release HTTP/1.0\r\n\r\n');
      await c.closed;
      expect(parse(c.received()).status).toBe(200);
    });
  });

  describe('slow clients', () => {
    it('disconnects a client sending its headers a byte at a time at the headers timeout, serving others meanwhile', async () => {
      const slow = await connect();
      const head = 'GET /api/v1/release HTTP/1.1\r\nHost: x\r\nX-Slow: ' + 'z'.repeat(200);
      let sent = 0;
      const drip = setInterval(() => {
        if (!slow.socket.destroyed && sent < head.length) slow.socket.write(head[sent++]);
      }, 250);
      try {
        // While the slow client is held, others are answered (before it is cut off, so not after it).
        let slowGone = false;
        void slow.closed.then(() => (slowGone = true));
        await sleep(300);
        // Asked at once, so that a loaded machine's slowness is paid once within the timeout, not thrice.
        const statuses = await Promise.all(
          Array.from({ length: 3 }, () =>
            fetch(`${server.api}/genes/PRR5`).then(async (r) => (await r.arrayBuffer(), r.status)),
          ),
        );
        expect(statuses).toEqual([200, 200, 200]);
        expect(slowGone).toBe(false);
        const after = await slow.closed;
        expect(sent).toBeLessThan(head.length); // it was cut off, not finished
        expect(after).toBeGreaterThanOrEqual(LIMITS.headersTimeoutMs - 50);
        expect(after).toBeLessThan(LIMITS.headersTimeoutMs + SLACK_MS);
        expect(slow.received()).toMatch(/^HTTP\/1\.1 408 /);
        expectProblem(slow.received(), 408);
      } finally {
        clearInterval(drip);
        slow.socket.destroy();
      }
    });

    it('disconnects a client that connects and sends nothing', async () => {
      const silent = await connect();
      const after = await silent.closed;
      expect(after).toBeGreaterThanOrEqual(LIMITS.headersTimeoutMs - 50);
      expect(after).toBeLessThan(LIMITS.headersTimeoutMs + SLACK_MS);
    });

    it('disconnects a client whose request body trickles past the request timeout', async () => {
      const c = await connect();
      c.socket.write('POST /api/v1/release HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n');
      const drip = setInterval(() => !c.socket.destroyed && c.socket.write('b'), 200);
      try {
        const after = await c.closed;
        expect(after).toBeGreaterThanOrEqual(LIMITS.requestTimeoutMs - 50);
        expect(after).toBeLessThan(LIMITS.requestTimeoutMs + SLACK_MS);
        // The method was refused as soon as the headers were in; the connection was still cut.
        expect(parse(c.received()).status).toBe(405);
      } finally {
        clearInterval(drip);
      }
    });
  });

  describe('keep-alive', () => {
    const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: x\r\n\r\n`;

    it('answers a request that says Connection: close, ignoring bytes pipelined after it', async () => {
      const c = await connect();
      c.socket.write(
        'GET /api/v1/genes/PRR5 HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n' + get('/api/v1/release'),
      );
      await c.closed;
      const answers = c.received().split(/(?=HTTP\/1\.1 )/);
      expect(answers).toHaveLength(1);
      const res = parse(answers[0]);
      expect(res.status).toBe(200);
      expect(res.headers.connection).toBe('close');
      expect(JSON.parse(res.body).symbol).toBe('PRR5');
    });

    it('closes an idle keep-alive connection after the keep-alive timeout', async () => {
      const c = await connect();
      c.socket.write(get('/api/v1/release'));
      while (!/\r\n\r\n/.test(c.received())) await sleep(10);
      const answered = performance.now();
      expect(parse(c.received()).status).toBe(200);
      await c.closed;
      const idle = performance.now() - answered;
      expect(idle).toBeGreaterThanOrEqual(LIMITS.keepAliveTimeoutMs - 100);
      expect(idle).toBeLessThan(LIMITS.keepAliveTimeoutMs + SLACK_MS);
    });

    it(`closes a connection after ${LIMITS.maxRequestsPerSocket} requests, the last answer saying so`, async () => {
      const c = await connect();
      // Pipelined: all at once, more than the bound.
      c.socket.write(get('/api/v1/release').repeat(LIMITS.maxRequestsPerSocket + 2));
      const after = await c.closed;
      expect(after).toBeLessThan(LIMITS.keepAliveTimeoutMs); // closed by the bound, not by idling
      const answers = c.received().split(/(?=HTTP\/1\.1 )/);
      expect(answers.map((a) => parse(a).status)).toEqual(Array(LIMITS.maxRequestsPerSocket).fill(200));
      expect(answers.map((a) => parse(a).headers.connection)).toEqual([
        ...Array(LIMITS.maxRequestsPerSocket - 1).fill('keep-alive'),
        'close',
      ]);
    });
  });
});

/** `n` connections from `from` (a 127.x address of this machine): what each received, and whether
 * it is still open. */
async function hold(to: { host: string; port: number }, from: string, n: number) {
  const held = await Promise.all(
    Array.from(
      { length: n },
      () =>
        new Promise<{ socket: net.Socket; received: () => string; open: () => boolean }>((resolve, reject) => {
          const socket = net.connect({ host: to.host, port: to.port, localAddress: from });
          let received = '';
          let open = true;
          socket.setEncoding('latin1');
          socket.on('data', (d: string) => (received += d));
          socket.on('close', () => (open = false));
          socket.on('error', () => {});
          socket.once('connect', () => resolve({ socket, received: () => received, open: () => open }));
          socket.once('error', reject);
        }),
    ),
  );
  return held;
}

/** Waits (bounded) until `done` holds. */
async function until(done: () => boolean, what: string) {
  for (let i = 0; i < 600 && !done(); i++) await sleep(50);
  expect(done(), what).toBe(true);
}

/** A request from `from` on a connection of its own; its status (0 when the connection failed). */
function statusFrom(to: { host: string; port: number }, from: string, path = '/api/v1/genes/PRR5'): Promise<number> {
  return new Promise((resolve) => {
    const socket = net.connect({ host: to.host, port: to.port, localAddress: from });
    let received = '';
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => (received += d));
    socket.on('error', () => {});
    socket.on('close', () => resolve(Number(/^HTTP\/1\.1 (\d{3}) /.exec(received)?.[1] ?? 0)));
    socket.once('connect', () => socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n`));
  });
}

describe('a fair share of connections', () => {
  const HOLDING = 1_100;
  let fair: RunningServer;
  let to: { host: string; port: number };
  const trusted = '127.0.0.4';
  beforeAll(async () => {
    // Idle connections are held for the whole test: long header timeouts, the default caps.
    const env = { [SERVER_LIMIT_ENV.headersTimeoutMs]: '120000', [SERVER_LIMIT_ENV.requestTimeoutMs]: '120000' };
    fair = await startServer({ dir: inject('fixtureTree'), env, extraArgs: ['--trust-proxy', trusted] });
    to = { host: '127.0.0.1', port: Number(new URL(fair.base).port) };
  });
  afterAll(async () => {
    await fair.stop();
  });

  it(`one address holding ${HOLDING} connections keeps its share; another address is answered 10 of 10`, async () => {
    const cap = SERVER_LIMITS.maxConnectionsPerAddress;
    expect(HOLDING).toBeGreaterThan(SERVER_LIMITS.maxConnections);
    const held = await hold(to, '127.0.0.2', HOLDING);
    try {
      const refused = () => held.filter((h) => h.received().length > 0 && !h.open());
      await until(() => refused().length >= HOLDING - cap, `${HOLDING - cap} connections refused`);
      // The refused ones got a 429 problem; exactly the share is still open, and was told nothing.
      const answer = refused()[0].received();
      expectProblem(answer, 429);
      expect(Number(parse(answer).headers['retry-after'])).toBeGreaterThan(0);
      expect(JSON.parse(parse(answer).body).detail).toContain(`at most ${cap} at once`);
      const kept = held.filter((h) => h.open());
      expect(kept).toHaveLength(cap);
      expect(kept.every((h) => h.received() === '')).toBe(true);

      const others = [];
      for (let i = 0; i < 10; i++) others.push(await statusFrom(to, '127.0.0.3'));
      expect(others).toEqual(Array(10).fill(200));
      // The held connections are still open, and usable: the address is served on them.
      expect(held.filter((h) => h.open())).toHaveLength(cap);
      kept[0].socket.write('GET /api/v1/release HTTP/1.1\r\nHost: x\r\n\r\n');
      await until(() => /\r\n\r\n/.test(kept[0].received()), 'an answer on a held connection');
      expect(parse(kept[0].received()).status).toBe(200);
      // Closing some gives the address room again.
      for (const h of kept.slice(0, 5)) h.socket.destroy();
      await until(() => held.filter((h) => h.open()).length === cap - 5, 'five closed');
      expect(await statusFrom(to, '127.0.0.2')).toBe(200);
      expect(fair.logs()).toMatch(/429 connections from 127\.0\.0\.2 over its share/);
    } finally {
      for (const h of held) h.socket.destroy();
    }
  });

  it('does not cap a trusted front, whose connections carry many clients', async () => {
    const cap = SERVER_LIMITS.maxConnectionsPerAddress;
    const held = await hold(to, trusted, cap + 10);
    try {
      await sleep(500);
      expect(held.filter((h) => !h.open() || h.received() !== '')).toHaveLength(0);
      expect(await statusFrom(to, trusted)).toBe(200);
    } finally {
      for (const h of held) h.socket.destroy();
    }
  });
});
