// What a slow client can hold of the nginx front: the config takes its timeouts and bounds from the
// server's limits (edge/adapters/server-limits.ts), and here from the same ISOATLAS_* variables the
// server reads, set short for the front and the server alike. Raw sockets control every byte and its
// timing (test/helpers/slow-clients.ts); every bound is five times the time stated, or more.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { SERVER_LIMIT_ENV, type ServerLimits } from '../edge/adapters/server-limits.js';
import { frontRequests, type RunningFront } from './helpers/nginx-front.js';
import { frontsOfSuite } from './helpers/nginx-suite.js';
import { rawRequest } from './helpers/raw-request.js';
import { runCli } from './helpers/run.js';
import { pipelined, slowHeaders, type HeldConnection } from './helpers/slow-clients.js';

const LIMITS: Partial<ServerLimits> = {
  headersTimeoutMs: 1_000,
  // Far from the headers' timeout, so that each is told from the other.
  sendTimeoutMs: 6_000,
  keepAliveTimeoutMs: 1_000,
  maxRequestsPerSocket: 12,
};
const ENV = Object.fromEntries(
  Object.entries(LIMITS).map(([field, value]) => [SERVER_LIMIT_ENV[field as keyof ServerLimits], String(value)]),
);
const { front } = frontsOfSuite();
let f: RunningFront;
let port: number;

beforeAll(async () => {
  f = await front({ dir: inject('fixtureTree'), env: ENV });
  port = Number(new URL(f.base).port);
});

/** One client of the front's, from an address of its own. */
const client = () => ({ host: '127.0.0.1', port, from: '127.0.0.2' });
const get = (path: string) => `GET ${path} HTTP/1.1\r\nHost: front\r\n\r\n`;
/** How long a connection lasted, from its connecting to its being closed. */
const lasted = (c: HeldConnection) => c.closedAt! - c.connectedAt!;

/** Status and headers of each answer in `raw` (answers pipelined on one connection). */
function answers(raw: string) {
  return raw
    .split(/(?=HTTP\/1\.1 \d{3} )/)
    .filter(Boolean)
    .map((answer) => {
      const [statusLine, ...lines] = answer.slice(0, answer.indexOf('\r\n\r\n')).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]),
      );
      return { status: Number(statusLine.split(' ')[1]), headers };
    });
}

describe('timeouts of the front, as the server states them', () => {
  it('refuses a limit that is not one, as the server does, naming it (exit 2)', async () => {
    const refused = await runCli(['nginx-config', '--dir', inject('fixtureTree')], {
      env: { ...process.env, [SERVER_LIMIT_ENV.headersTimeoutMs]: 'soon' },
    });
    expect(refused.status).toBe(2);
    expect(refused.stderr).toContain(`${SERVER_LIMIT_ENV.headersTimeoutMs} must be a positive integer; got "soon"`);
    expect(refused.stdout).toBe('');
  });

  it('writes them into the config from the limits given', () => {
    for (const line of [
      'client_header_timeout 1000ms;',
      'client_body_timeout 1000ms;',
      'send_timeout 6000ms;',
      'keepalive_timeout 1000ms 1s;',
      'keepalive_requests 12;',
      'reset_timedout_connection on;',
    ])
      expect(f.config).toContain(line);
  });

  it('cuts a client sending its headers a byte at a time at the headers timeout, without an answer, and serves another client meanwhile', async () => {
    const T = LIMITS.headersTimeoutMs!;
    // A byte every tenth of the timeout: a timer reset by each byte would never fire.
    const slow = slowHeaders({ ...client(), count: 1, dripMs: T / 10 });
    await slow.settled;
    const other = await rawRequest(f.base, '/api/v1/genes/PRR5', { from: '127.0.0.3' });
    expect(other.status).toBe(200);
    await slow.ended;
    const [held] = slow.connections;
    expect(lasted(held)).toBeGreaterThanOrEqual(T - 50);
    expect(lasted(held)).toBeLessThan(5 * T);
    // nginx terminates the request (nginx: client_header_timeout) and resets the connection.
    expect(held.received.toString('latin1')).toBe('');
  });

  it('cuts a client that connects and sends nothing at the headers timeout', async () => {
    const T = LIMITS.headersTimeoutMs!;
    const silent = pipelined({ ...client(), requests: [] });
    await silent.ended;
    const [held] = silent.connections;
    expect(lasted(held)).toBeGreaterThanOrEqual(T - 50);
    expect(lasted(held)).toBeLessThan(5 * T);
  });

  it('cuts a client whose request body stops at the body timeout, without an answer', async () => {
    const T = LIMITS.headersTimeoutMs!;
    const head = 'POST /api/v1/search HTTP/1.1\r\nHost: front\r\nContent-Length: 1000\r\n\r\n';
    const c = pipelined({ ...client(), requests: [`${head}part of a body`] });
    await c.ended;
    const [held] = c.connections;
    expect(lasted(held)).toBeGreaterThanOrEqual(T - 50);
    expect(lasted(held)).toBeLessThan(5 * T);
    expect(held.received.toString('latin1')).toBe('');
  });

  it('cuts a client that never reads a large answer at the send timeout', async () => {
    const T = LIMITS.sendTimeoutMs!;
    // Answers far larger than what the two sockets' buffers hold, asked for at once.
    const asset = '/api/v1/docs/swagger-ui-bundle.js';
    const one = await rawRequest(f.base, asset);
    expect(one.status).toBe(200);
    const count = Math.min(LIMITS.maxRequestsPerSocket!, Math.ceil((32 * 2 ** 20) / one.body.length));
    const stalled = pipelined({ ...client(), requests: Array(count).fill(get(asset)), neverReadingDripMs: T / 10 });
    await stalled.ended;
    const [held] = stalled.connections;
    expect(count * one.body.length).toBeGreaterThan(16 * 2 ** 20);
    expect(lasted(held)).toBeGreaterThanOrEqual(T - 50);
    expect(lasted(held)).toBeLessThan(5 * T);
  });
});

describe('keep-alive through the front, as the server keeps it', () => {
  it('closes an idle keep-alive connection after the keep-alive timeout, which its answers state', async () => {
    const T = LIMITS.keepAliveTimeoutMs!;
    const [file] = [...(await frontRequests(inject('fixtureTree'))).keys()].filter((k) =>
      k.startsWith('/api/v1/isoforms/'),
    );
    // An answer from a file (nginx's) and one passed from the server.
    for (const path of [file, '/api/v1/genes/PRR5']) {
      const c = pipelined({ ...client(), requests: [get(path)] });
      await c.ended;
      const [held] = c.connections;
      const [answer] = answers(held.received.toString('latin1'));
      expect(answer.status, path).toBe(200);
      expect(answer.headers['keep-alive'], path).toBe(`timeout=${T / 1000}`);
      // The idle time starts once nginx has sent the answer, which a loaded client may read late: so
      // the least it can be is counted from the connection's opening (before anything was sent), and
      // the most from the answer's arrival.
      expect(held.closedAt! - held.openedAt, path).toBeGreaterThanOrEqual(T);
      expect(held.closedAt! - held.receivedAt!, path).toBeLessThan(5 * T);
    }
  });

  it(`closes a connection after ${LIMITS.maxRequestsPerSocket} requests, the last answer saying so`, async () => {
    const n = LIMITS.maxRequestsPerSocket!;
    const c = pipelined({ ...client(), requests: Array(n + 2).fill(get('/api/v1/release')) });
    await c.ended;
    const [held] = c.connections;
    expect(lasted(held)).toBeLessThan(LIMITS.keepAliveTimeoutMs!); // closed by the bound, not by idling
    const all = answers(held.received.toString('latin1'));
    expect(all.map((a) => a.status)).toEqual(Array(n).fill(200));
    expect(all.map((a) => a.headers.connection)).toEqual([...Array(n - 1).fill('keep-alive'), 'close']);
  });
});
