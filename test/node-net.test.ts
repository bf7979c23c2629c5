// The HTTP/1.1 framing of node-net.ts (the default front end of `isoatlas serve`), driven by raw
// sockets: what it accepts, answers in order and refuses. Node's http server is the reference where
// both must agree (node-direct-path.test.ts compares their answers byte for byte; server-limits.test.ts
// runs the timeouts and size limits against both).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import net from 'node:net';
import { readFileSync, readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import type { AddressInfo } from 'node:net';
import { createHandler } from '../edge/handler.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { AnswerEncoder, createNetServer, type EdgeNetServer } from '../edge/adapters/node-net.js';
import { EdgeResponse } from '../edge/responses.js';
import { SERVER_LIMITS, shutdownGracefully } from '../edge/adapters/node-shared.js';
import { validate } from './helpers/schemas.js';

let server: EdgeNetServer;
let port: number;
const logged: string[] = [];

beforeAll(async () => {
  const handler = createHandler({ origin: new LocalTreeOrigin(inject('demoTree')), serveStructureFiles: true });
  server = createNetServer(handler, { log: (line) => logged.push(line), limits: { headersTimeoutMs: 1_000, requestTimeoutMs: 2_000, keepAliveTimeoutMs: 1_000 } });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  port = (server.address() as AddressInfo).port;
});
afterAll(async () => {
  await shutdownGracefully(server, 1_000);
});

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** The whole answers at the start of `raw`, and how many bytes they take. `heads`: how many answers
 * at the start answer HEAD requests (their Content-Length has no body). */
function answersIn(raw: Buffer, heads = 0): { answers: Answer[]; length: number } {
  const answers: Answer[] = [];
  let at = 0;
  for (;;) {
    const headEnd = raw.indexOf('\r\n\r\n', at);
    if (headEnd === -1) break;
    const [statusLine, ...lines] = raw.subarray(at, headEnd).toString('latin1').split('\r\n');
    const headers = Object.fromEntries(lines.map((l) => [l.slice(0, l.indexOf(':')).toLowerCase(), l.slice(l.indexOf(':') + 1).trim()]));
    const status = Number(statusLine.split(' ')[1]);
    const length = answers.length < heads ? 0 : Number(headers['content-length'] ?? 0);
    if (raw.length < headEnd + 4 + length) break;
    answers.push({ status, headers, body: raw.subarray(headEnd + 4, headEnd + 4 + length) });
    at = headEnd + 4 + length;
  }
  return { answers, length: at };
}

/** Sends `bytes` (in pieces, if several), reads until the server closes or `count` answers are in.
 * `heads`: how many answers at the start answer HEAD requests (their Content-Length has no body). */
function exchange(bytes: string | Buffer | (string | Buffer)[], count = Infinity, end = false, heads = 0): Promise<{ answers: Answer[]; closed: boolean; raw: Buffer }> {
  return new Promise((resolve, reject) => {
    const socket = net.connect(port, '127.0.0.1');
    let raw = Buffer.alloc(0);
    let closed = false;
    const answers = () => answersIn(raw, heads).answers;
    const finish = () => resolve({ answers: answers(), closed, raw });
    socket.on('data', (d: Buffer) => {
      raw = Buffer.concat([raw, d]);
      if (answers().length >= count) {
        socket.destroy();
        finish();
      }
    });
    socket.on('close', () => {
      closed = true;
      finish();
    });
    socket.on('error', reject);
    socket.once('connect', async () => {
      for (const piece of [bytes].flat()) {
        socket.write(piece);
        await new Promise((ok) => setTimeout(ok, 20));
      }
      if (end) socket.end();
    });
  });
}

/** Runs `run` against a server of the test's own (listening on a free port), then shuts it down. */
async function serving(own: EdgeNetServer, run: (port: number) => Promise<void>): Promise<void> {
  await new Promise<void>((ok) => own.listen(0, '127.0.0.1', ok));
  try {
    await run((own.address() as AddressInfo).port);
  } finally {
    await shutdownGracefully(own, 1_000);
  }
}

const get = (target: string, extra = '') => `GET ${target} HTTP/1.1\r\nHost: atlas.test\r\n${extra}\r\n`;

function expectProblem(answer: Answer, status: number) {
  expect(answer.status).toBe(status);
  expect(answer.headers['content-type']).toMatch(/^application\/problem\+json/);
  const body = JSON.parse(answer.body.toString('utf8')) as { status: number };
  expect(validate('Problem', body)).toEqual([]);
  expect(body.status).toBe(status);
}

describe('requests it answers', () => {
  it('answers pipelined requests in order on one connection', async () => {
    const targets = ['/api/v1/genes/PRR5', '/api/v1/isoforms/PRR5-201', '/api/v1/genes/NOPE1', '/api/v1/search?query=PRR5', '/api/v1/release'];
    const { answers } = await exchange(targets.map((t) => get(t)).join(''), targets.length);
    expect(answers.map((a) => a.status)).toEqual([200, 200, 404, 200, 200]);
    expect(JSON.parse(answers[0].body.toString()).symbol).toBe('PRR5');
    expect(JSON.parse(answers[1].body.toString()).transcript_name).toBe('PRR5-201');
    expect(JSON.parse(answers[3].body.toString()).query).toBe('PRR5');
    expect(answers.every((a) => a.headers.connection === 'keep-alive')).toBe(true);
  });

  it('reads a request split across many packets, a byte of its head at a time', async () => {
    const request = get('/api/v1/genes/PRR5');
    const { answers } = await exchange([...request], 1);
    expect(answers[0].status).toBe(200);
  });

  it('drops a Content-Length body and answers the request after it', async () => {
    const body = 'x'.repeat(5_000);
    const first = `POST /api/v1/release HTTP/1.1\r\nHost: atlas.test\r\nContent-Length: ${body.length}\r\n\r\n`;
    const { answers } = await exchange([first, body.slice(0, 2_000), body.slice(2_000) + get('/api/v1/genes/PRR5')], 2);
    expectProblem(answers[0], 405);
    expect(answers[1].status).toBe(200);
  });

  it('answers a request with a chunked body, then closes (the body is not parsed)', async () => {
    const { answers, closed } = await exchange(`POST /api/v1/release HTTP/1.1\r\nHost: atlas.test\r\nTransfer-Encoding: chunked\r\n\r\n5\r\nhello\r\n0\r\n\r\n${get('/api/v1/release')}`);
    expect(answers).toHaveLength(1);
    expectProblem(answers[0], 405);
    expect(answers[0].headers.connection).toBe('close');
    expect(closed).toBe(true);
  });

  it('keeps HTTP/1.0 alive only when asked to', async () => {
    const plain = await exchange('GET /api/v1/release HTTP/1.0\r\n\r\n');
    expect(plain.answers.map((a) => [a.status, a.headers.connection])).toEqual([[200, 'close']]);
    expect(plain.closed).toBe(true);
    const kept = await exchange('GET /api/v1/release HTTP/1.0\r\nConnection: keep-alive\r\n\r\n', 1);
    expect(kept.answers.map((a) => [a.status, a.headers.connection])).toEqual([[200, 'keep-alive']]);
  });

  it('honours Connection: close, and answers a client that half-closes after its request', async () => {
    const closing = await exchange(get('/api/v1/release', 'Connection: close\r\n') + get('/api/v1/release'));
    expect(closing.answers.map((a) => a.headers.connection)).toEqual(['close']);
    const halfClosed = await exchange(get('/api/v1/genes/PRR5') + get('/api/v1/release'), Infinity, true);
    expect(halfClosed.answers.map((a) => a.status)).toEqual([200, 200]);
    expect(halfClosed.closed).toBe(true);
  });

  it('ignores an empty line before a request line, and answers HEAD without a body', async () => {
    const { answers } = await exchange(`\r\n${get('/api/v1/release').replace('GET', 'HEAD')}${get('/api/v1/genes/PRR5')}`, 2, false, 1);
    expect(answers[0].status).toBe(200);
    expect(Number(answers[0].headers['content-length'])).toBeGreaterThan(0);
    expect(answers[0].body.length).toBe(0); // the next answer follows at once
    expect(JSON.parse(answers[1].body.toString()).symbol).toBe('PRR5');
  });

  it('joins repeated header fields as a Web Headers object would', async () => {
    const etag = (await exchange(get('/api/v1/genes/PRR5'), 1)).answers[0].headers.etag;
    const { answers } = await exchange(get('/api/v1/genes/PRR5', `If-None-Match: "nope"\r\nif-none-match:  ${etag}  \r\n`), 1);
    expect(answers[0].status).toBe(304);
  });
});

describe('answers written to a client that reads slowly', () => {
  it('gives every answer its own bytes when they queue behind a reader that has stopped reading', async () => {
    // Answers are copied into one reused output buffer; while the socket still holds one, it must not
    // be written over. The 40 largest gene records, asked 25 times each in turn (10 MB), overfill the
    // kernel's buffers while the client does not read, so most answers wait in the socket.
    const dir = join(inject('demoTree'), 'api/v1/genes');
    const files = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .map((f) => ({ id: f.slice(0, -5), size: statSync(join(dir, f)).size }))
      .sort((a, b) => b.size - a.size)
      .slice(0, 40);
    const asked = Array.from({ length: 1000 }, (_, i) => files[i % files.length].id);
    const received = await new Promise<Buffer>((resolve, reject) => {
      const socket = net.connect(port, '127.0.0.1');
      const chunks: Buffer[] = [];
      let bytes = 0;
      socket.pause();
      socket.on('data', (d: Buffer) => {
        chunks.push(d);
        bytes += d.length;
      });
      socket.on('error', reject);
      socket.on('close', () => resolve(Buffer.concat(chunks, bytes)));
      socket.once('connect', () => {
        socket.write(asked.map((id, i) => get(`/api/v1/genes/${id}`, i === asked.length - 1 ? 'Connection: close\r\n' : '')).join(''));
        setTimeout(() => socket.resume(), 500);
      });
    });
    const { answers, length } = answersIn(received);
    expect(answers).toHaveLength(asked.length);
    asked.forEach((id, i) => expect(answers[i].body.equals(readFileSync(join(dir, `${id}.json`))), `answer for ${id}`).toBe(true));
    expect(length).toBe(received.length);
  });
});

describe('answers held until the end of the event loop\'s turn', () => {
  /** Sends each request on its own connection, all before the server can read any (the event loop is
   * held meanwhile), so it reads them in one turn; resolves with what each connection received by the
   * time the server closed it or its `count` answers were in. */
  function sendAtOnce(p: number, requests: string[], count: number, end = false): Promise<Buffer[]> {
    return Promise.all(
      requests.map(
        (request) =>
          new Promise<net.Socket>((ok, fail) => {
            const socket = net.connect(p, '127.0.0.1', () => ok(socket));
            socket.on('error', fail);
          }),
      ),
    ).then((sockets) => {
      const received = sockets.map(
        (socket) =>
          new Promise<Buffer>((resolve) => {
            const chunks: Buffer[] = [];
            const done = () => resolve(Buffer.concat(chunks));
            socket.on('data', (d: Buffer) => {
              chunks.push(d);
              if (answersIn(Buffer.concat(chunks)).answers.length >= count) {
                socket.destroy();
                done();
              }
            });
            socket.on('close', done);
          }),
      );
      sockets.forEach((socket, i) => (end ? socket.end(requests[i]) : socket.write(requests[i])));
      const until = Date.now() + 50;
      while (Date.now() < until); // the requests all reach the server's socket buffers before it reads
      return Promise.all(received);
    });
  }

  it('gives each of many connections read in one turn its own answer', async () => {
    const dir = join(inject('demoTree'), 'api/v1/genes');
    const ids = readdirSync(dir)
      .filter((f) => f.endsWith('.json'))
      .slice(0, 40)
      .map((f) => f.slice(0, -5));
    const received = await sendAtOnce(port, ids.map((id) => get(`/api/v1/genes/${id}`)), 1);
    ids.forEach((id, i) => {
      const { answers, length } = answersIn(received[i]);
      expect(answers, `answers for ${id}`).toHaveLength(1);
      expect(answers[0].body.equals(readFileSync(join(dir, `${id}.json`))), `answer for ${id}`).toBe(true);
      expect(length).toBe(received[i].length);
    });
  });

  it('answers clients that send their request and half-close at once', async () => {
    const received = await sendAtOnce(port, Array.from({ length: 10 }, () => get('/api/v1/genes/PRR5')), Infinity, true);
    for (const raw of received) {
      const { answers } = answersIn(raw);
      expect(answers.map((a) => a.status)).toEqual([200]);
      expect(JSON.parse(answers[0].body.toString()).symbol).toBe('PRR5');
    }
  });

  it('answers a client that half-closed while its answer was being made', async () => {
    const own = createNetServer(async () => {
      await new Promise((ok) => setTimeout(ok, 50));
      return new Response('{"ok":true}', { headers: { 'content-type': 'application/json' } });
    });
    await serving(own, async (p) => {
      const [received] = await sendAtOnce(p, [get('/')], Infinity, true);
      expect(answersIn(received).answers.map((a) => a.body.toString())).toEqual(['{"ok":true}']);
    });
  });

  it('writes the held answers before closing idle connections at shutdown', async () => {
    // The handler asks for idle connections to be closed in the same turn as its answer is held (its
    // immediate runs before the one that writes held answers), as a signal's handler may: the answer
    // must still go out first.
    const own = createNetServer(async () => {
      setImmediate(() => own.closeIdleConnections());
      return new Response('{"ok":true}', { headers: { 'content-type': 'application/json' } });
    });
    await serving(own, async (p) => {
      const [received] = await sendAtOnce(p, [get('/')], Infinity);
      expect(answersIn(received).answers.map((a) => a.body.toString())).toEqual(['{"ok":true}']);
    });
  });
});

describe('answers larger than the output buffer', () => {
  it('writes an answer of 200 KB whole, between smaller ones on the same connection', async () => {
    // Answers up to 64 KiB are copied whole into the output buffer; a larger one is written in two parts.
    const big = Buffer.from(JSON.stringify({ items: Array.from({ length: 20_000 }, (_, i) => `item-${i}`) }));
    expect(big.length).toBeGreaterThan(200_000);
    const small = Buffer.from('{"small":true}');
    const own = createNetServer(async (request) => new Response(new URL(request.url).pathname === '/big' ? big : small, { headers: { 'content-type': 'application/json' } }));
    await serving(own, async (p) => {
      const received = await new Promise<Buffer>((resolve, reject) => {
        const socket = net.connect(p, '127.0.0.1');
        const chunks: Buffer[] = [];
        socket.on('data', (d: Buffer) => chunks.push(d));
        socket.on('error', reject);
        socket.on('close', () => resolve(Buffer.concat(chunks)));
        socket.once('connect', () => socket.write(get('/small') + get('/big') + get('/small') + get('/big', 'Connection: close\r\n')));
      });
      const { answers, length } = answersIn(received);
      expect(answers.map((a) => a.body.length)).toEqual([small, big, small, big].map((b) => b.length));
      [small, big, small, big].forEach((expected, i) => expect(answers[i].body.equals(expected), `answer ${i}`).toBe(true));
      expect(length).toBe(received.length);
    });
  });
});

describe('header lines read once per connection while they stay the same', () => {
  it('answers each request by its own headers when they change between requests on one connection', async () => {
    const etag = (await exchange(get('/api/v1/genes/PRR5'), 1)).answers[0].headers.etag;
    const requests = [get('/api/v1/genes/PRR5'), get('/api/v1/genes/PRR5', `If-None-Match: ${etag}\r\n`), get('/api/v1/genes/PRR5'), get('/api/v1/genes/PRR5', 'Connection: close\r\n'), get('/api/v1/genes/PRR5')];
    const { answers, closed } = await exchange(requests.join(''));
    expect(answers.map((a) => [a.status, a.headers.connection])).toEqual([
      [200, 'keep-alive'],
      [304, 'keep-alive'],
      [200, 'keep-alive'],
      [200, 'close'],
    ]);
    expect(closed).toBe(true);
  });

  it('refuses malformed header lines after well-formed ones on the same connection', async () => {
    const { answers, closed } = await exchange(get('/api/v1/release') + 'GET /api/v1/release HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n' + get('/api/v1/release'));
    expect(answers.map((a) => a.status)).toEqual([200, 400]);
    expect(closed).toBe(true);
  });
});

describe('requests it refuses, closing the connection', () => {
  const refused: [string, string, number][] = [
    ['a header continued on the next line (obs-fold)', 'GET /api/v1/release HTTP/1.1\r\nHost: atlas.test\r\nX-A: b\r\n  c\r\n\r\n', 400],
    ['a space before the colon', 'GET /api/v1/release HTTP/1.1\r\nHost : atlas.test\r\n\r\n', 400],
    ['a control character in a value', 'GET /api/v1/release HTTP/1.1\r\nHost: atlas.test\r\nX-A: b\u0001c\r\n\r\n', 400],
    ['a bare CR in a value', 'GET /api/v1/release HTTP/1.1\r\nHost: atlas.test\r\nX-A: b\rc\r\n\r\n', 400],
    ['two Host headers', 'GET /api/v1/release HTTP/1.1\r\nHost: a.test\r\nHost: b.test\r\n\r\n', 400],
    ['Content-Length and Transfer-Encoding both', 'POST /api/v1/release HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nTransfer-Encoding: chunked\r\n\r\nhello', 400],
    ['two different lengths', 'POST /api/v1/release HTTP/1.1\r\nHost: a.test\r\nContent-Length: 5\r\nContent-Length: 6\r\n\r\nhello!', 400],
    ['a length that is no number', 'POST /api/v1/release HTTP/1.1\r\nHost: a.test\r\nContent-Length: -5\r\n\r\n', 400],
    ['a request line without a version', 'GET /api/v1/release\r\nHost: a.test\r\n\r\n', 400],
    ['a space in the target', 'GET /api/v1/genes/PRR 5 HTTP/1.1\r\nHost: a.test\r\n\r\n', 400],
    ['a target that is no path', 'GET api/v1/release HTTP/1.1\r\nHost: a.test\r\n\r\n', 400],
    ['HTTP/2.0 in the request line', 'GET /api/v1/release HTTP/2.0\r\nHost: a.test\r\n\r\n', 505],
    ['a version that is no digit', 'GET /api/v1/release HTTP/1.x\r\nHost: a.test\r\n\r\n', 400],
    ['a method that is no token', 'G{T /api/v1/release HTTP/1.1\r\nHost: a.test\r\n\r\n', 400],
    ['no target', 'GET  HTTP/1.1\r\nHost: a.test\r\n\r\n', 400],
    ['a request line of one word', 'GET\r\nHost: a b.test\r\n\r\n', 400],
  ];
  it.each(refused)('%s', async (_, bytes, status) => {
    const { answers, closed } = await exchange(`${bytes}${get('/api/v1/release')}`);
    expect(answers).toHaveLength(1); // nothing after the refused request is read
    expectProblem(answers[0], status);
    expect(answers[0].headers.connection).toBe('close');
    expect(closed).toBe(true);
  });

  it('answers a refused HEAD request without a body', async () => {
    const { answers, closed, raw } = await exchange('HEAD /api/v1/release HTTP/1.1\r\nHost : atlas.test\r\n\r\n', Infinity, false, 1);
    expect(answers.map((a) => a.status)).toEqual([400]);
    expect(closed).toBe(true);
    expect(raw.indexOf('\r\n\r\n')).toBe(raw.length - 4); // nothing after the head
  });

  it('times out a head that never ends (bare LF line endings) with a 408', async () => {
    const started = performance.now();
    const { answers, closed } = await exchange('GET /api/v1/release HTTP/1.1\nHost: atlas.test\n\n');
    expect(closed).toBe(true);
    expectProblem(answers[0], 408);
    expect(performance.now() - started).toBeGreaterThanOrEqual(1_000 - 50);
  });

  it('logs one line per request, refusals included, with no header in it', () => {
    expect(logged.some((l) => /^GET \/api\/v1\/genes\/PRR5 200 \d+\.\dms$/.test(l))).toBe(true);
    expect(logged.some((l) => l === '- - 505 version')).toBe(true);
    expect(logged.some((l) => l.includes('atlas.test'))).toBe(false);
  });
});

describe('the answer encoder', () => {
  const limits = { ...SERVER_LIMITS, keepAliveTimeoutMs: 7_000 };
  const text = (encoded: { bytes: Buffer; body: Uint8Array | null }) => Buffer.concat([encoded.bytes, encoded.body ?? Buffer.alloc(0)]).toString('latin1');

  it('writes the status line, shared and own fields, the length, Date, Connection and the body', () => {
    const encoder = new AnswerEncoder(limits);
    for (const size of [0, 1, 9, 10, 99, 100, 714, 65_535, 100_000]) {
      const body = Buffer.alloc(size, 'x');
      const response = EdgeResponse.sharing(200, ['content-type', 'application/json', 'etag', '"abc"'], body);
      response.set('ratelimit-remaining', '41');
      const got = text(encoder.encode(response, body, size % 2 === 0));
      const [head, rest] = [got.slice(0, got.indexOf('\r\n\r\n') + 4), got.slice(got.indexOf('\r\n\r\n') + 4)];
      const date = /\r\nDate: ([^\r]+)\r\n/.exec(head)![1];
      expect(Math.abs(Date.parse(date) - Date.now())).toBeLessThan(2_000);
      const connection = size % 2 === 0 ? 'Connection: keep-alive\r\nKeep-Alive: timeout=7\r\n' : 'Connection: close\r\n';
      expect(head, `${size} bytes`).toBe(`HTTP/1.1 200 OK\r\ncontent-type: application/json\r\netag: "abc"\r\nratelimit-remaining: 41\r\nContent-Length: ${size}\r\nDate: ${date}\r\n${connection}\r\n`);
      expect(rest).toBe('x'.repeat(size));
    }
  });

  it('writes no length of its own when the answer gives one, and none for 304', () => {
    const encoder = new AnswerEncoder(limits);
    const given = text(encoder.encode(EdgeResponse.of(200, { 'content-length': '3' }, Buffer.from('abc')), null, true));
    expect(given.match(/content-length/gi)).toHaveLength(1);
    const notModified = text(encoder.encode(EdgeResponse.of(304, { etag: '"abc"' }, null), null, true));
    expect(notModified).not.toMatch(/content-length/i);
    expect(notModified).toMatch(/^HTTP\/1\.1 304 Not Modified\r\n/);
  });

  it('reuses its buffer once sockets took their answers, never while one holds them, and gives a socket that fell behind copies', () => {
    const encoder = new AnswerEncoder(limits);
    const written: Buffer[] = [];
    /** A socket that takes everything, or (`falls behind`) that holds what it is given unsent. */
    const socketThat = (fallsBehind: boolean) => {
      const socket = {
        writableLength: 0,
        write(bytes: Buffer) {
          written.push(bytes);
          if (fallsBehind) socket.writableLength += bytes.length;
          return !fallsBehind;
        },
      };
      return socket as unknown as net.Socket;
    };
    const body = Buffer.from('{"gene":1}');
    const answer = () => encoder.encode(EdgeResponse.sharing(200, ['content-type', 'application/json'], body), body, true).bytes;
    const overlap = (a: Buffer, b: Buffer) => a.buffer === b.buffer && a.byteOffset < b.byteOffset + b.length && b.byteOffset < a.byteOffset + a.length;

    const first = answer();
    encoder.write(socketThat(false), first);
    encoder.rewind();
    const second = answer();
    expect(second.buffer).toBe(first.buffer);
    expect(second.byteOffset).toBe(first.byteOffset); // taken: the buffer is used again from its start

    const slow = socketThat(true);
    encoder.write(slow, second);
    expect(written.at(-1)).toBe(second); // the socket holds the buffer's own bytes now
    encoder.rewind();
    const third = answer();
    expect(overlap(third, second)).toBe(false);
    encoder.write(slow, third);
    expect(written.at(-1)!.buffer).not.toBe(third.buffer); // a copy: the socket already held bytes
    expect(written.at(-1)!.equals(third)).toBe(true);
    encoder.rewind();
    expect(overlap(answer(), second)).toBe(false);

    // An answer too large to copy whole: its head apart from the buffer, which sockets may hold.
    const large = Buffer.alloc(100_000, 'x');
    const split = encoder.encode(EdgeResponse.sharing(200, ['content-type', 'application/json'], large), large, true);
    expect(split.body).toBe(large);
    expect(split.bytes.buffer).not.toBe(answer().buffer);
  });

  it('refuses a header value that Node would refuse to send (a line break, a control character, one above U+00FF)', () => {
    const encoder = new AnswerEncoder(limits);
    for (const value of ['a\r\nset-cookie: x=1', 'a\nb', 'nul\u0000', 'del\u007f', 'bell\u0007', 'snake\u0100']) {
      expect(() => encoder.encode(EdgeResponse.of(200, { 'x-test': value }, null), null, true), JSON.stringify(value)).toThrow(/x-test/);
      expect(() => encoder.encode(EdgeResponse.sharing(200, ['x-shared', value], null), null, true), JSON.stringify(value)).toThrow(/x-shared/);
    }
    // Tab, visible ASCII and obs-text are sent as they are, one byte each.
    const ok = encoder.encode(EdgeResponse.of(200, { 'x-test': 'a\tb ~é\u00ff' }, null), null, true);
    expect(ok.bytes.includes(Buffer.from('x-test: a\tb ~\u00e9\u00ff\r\n', 'latin1'))).toBe(true);
  });
});
