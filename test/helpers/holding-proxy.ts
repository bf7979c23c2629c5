// An HTTP proxy in front of a test's S3 server that holds chosen requests until the test lets them
// go (or drops them), so a race between two commands is staged step by step instead of timed. It can
// also strip S3's conditional-write headers, to stand for a server that ignores them, and answer
// chosen requests with an S3 error itself, to stand for a server failing mid-way.
import http, { type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface Hold {
  /** Resolves when the first matching request is being held. */
  held: Promise<void>;
  /** Sends the held requests on; later ones are not held. */
  release(): void;
  /** Closes the connections of the held requests without an answer; later ones are not held. */
  drop(): void;
}

export interface HoldingProxy {
  endpoint: string;
  /** Holds every request `match` selects, from now on, until released or dropped. */
  hold(match: (method: string, path: string) => boolean): Hold;
  /** Answers every request `match` selects, from now on, with S3's error `code` and `status` instead
   * of sending it on (`match` sees every request, in the order they come); returns what ends it. */
  fail(match: (method: string, path: string) => boolean, status?: number, code?: string): () => void;
  /** Requests sent on to the server whose answer has not come back yet: resolves when there are none. */
  idle(): Promise<void>;
  /** Requests sent on to the server, by method and path. */
  forwarded: { method: string; path: string; status: number }[];
  close(): Promise<void>;
}

export async function startHoldingProxy(
  target: string,
  opts: { stripConditions?: boolean } = {},
): Promise<HoldingProxy> {
  const upstream = new URL(target);
  const holds: {
    match: (method: string, path: string) => boolean;
    gate: Promise<'release' | 'drop'>;
    heldOne: () => void;
  }[] = [];
  const failures: { match: (method: string, path: string) => boolean; status: number; code: string }[] = [];
  let inFlight = 0;
  let whenIdle: (() => void)[] = [];
  const forwarded: HoldingProxy['forwarded'] = [];

  const server = http.createServer(async (req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const method = req.method ?? 'GET';
    const path = decodeURIComponent(new URL(req.url ?? '/', 'http://proxy').pathname);
    const failure = failures.find((f) => f.match(method, path));
    if (failure) {
      res.writeHead(failure.status, { 'content-type': 'application/xml' });
      return void res.end(
        `<?xml version="1.0" encoding="UTF-8"?><Error><Code>${failure.code}</Code><Message>failed by the test's proxy</Message></Error>`,
      );
    }
    const hold = holds.find((h) => h.match(method, path));
    if (hold) {
      hold.heldOne();
      if ((await hold.gate) === 'drop') return void req.socket.destroy();
    }
    const headers = { ...req.headers };
    if (opts.stripConditions) {
      delete headers['if-match'];
      delete headers['if-none-match'];
    }
    inFlight++;
    // Sent on whole even if the client has gone: what reached the proxy reaches the server.
    const out = http.request(
      { host: upstream.hostname, port: upstream.port, method, path: req.url, headers },
      (answer) => {
        forwarded.push({ method, path, status: answer.statusCode ?? 0 });
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
        answer.on('end', () => {
          if (--inFlight === 0) for (const done of whenIdle.splice(0)) done();
        });
      },
    );
    out.on('error', () => res.destroy());
    out.end(Buffer.concat(chunks));
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return {
    endpoint: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
    forwarded,
    hold(match) {
      let decide!: (how: 'release' | 'drop') => void;
      let heldOne!: () => void;
      const held = new Promise<void>((ok) => (heldOne = ok));
      const gate = new Promise<'release' | 'drop'>((ok) => (decide = ok));
      const entry = { match, gate, heldOne };
      holds.push(entry);
      const end = (how: 'release' | 'drop') => {
        holds.splice(holds.indexOf(entry), 1);
        decide(how);
      };
      return { held, release: () => end('release'), drop: () => end('drop') };
    },
    fail(match, status = 500, code = 'InternalError') {
      const entry = { match, status, code };
      failures.push(entry);
      return () => void failures.splice(failures.indexOf(entry), 1);
    },
    idle: () => (inFlight === 0 ? Promise.resolve() : new Promise<void>((ok) => whenIdle.push(ok))),
    async close() {
      server.closeAllConnections();
      await new Promise((ok) => server.close(ok));
      whenIdle = [];
    },
  };
}
