// Adapter: Node's http server → the edge handler. Used by `isoatlas serve` (the local server and
// offline mirrors). Converts IncomingMessage to a Web Request and the Response back, logs one line per
// request, and bounds what a slow or oversized client can hold.
import http from 'node:http';
import type { Handler } from '../handler.js';
import { ALLOW, problem } from '../responses.js';
import { redactKeys } from '../access/key-format.js';

export interface NodeServerOptions {
  /** One line per request; never includes headers (they may carry an API key). */
  log?: (line: string) => void;
}

/** Bounds on what one client can hold: header size, time to send headers, time for the request. */
export const SERVER_LIMITS = {
  maxHeaderSize: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
};

function printable(text: string): string {
  // Request targets go into logs: escape control characters so a client cannot forge log lines.
  const redacted = redactKeys(text);
  const cut = redacted.length > 300 ? `${redacted.slice(0, 300)}…` : redacted;
  return cut.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Methods Node's fetch Request refuses to construct; they are answered 405 like any other. */
const UNCONSTRUCTIBLE = new Set(['CONNECT', 'TRACE', 'TRACK']);

/** The Web Request for an incoming message, or a Response when the message cannot become one. */
function toRequest(req: http.IncomingMessage, fallbackHost: string): Request | Response {
  const target = req.url ?? '';
  const host = req.headers.host && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(req.headers.host) ? req.headers.host : fallbackHost;
  // The target is appended to a fixed scheme and host, never resolved against them: a target such
  // as `//evil.example/…` must stay a path, not choose the host that redirects point to.
  let url: URL | null = null;
  try {
    if (target.startsWith('/')) url = new URL(`http://${host}${target}`);
  } catch {
    url = null;
  }
  const method = req.method ?? 'GET';
  if (!url) return problem(new Request(`http://${host}/`), { status: 400, detail: 'the request target must be an absolute path such as /api/v1/' });
  if (UNCONSTRUCTIBLE.has(method)) {
    return problem(new Request(url), { status: 405, detail: `method ${method} is not allowed; this API is read-only`, headers: { Allow: ALLOW } });
  }
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    try {
      headers.set(name, Array.isArray(value) ? value.join(', ') : value);
    } catch {
      // A header value Headers refuses (invalid characters) is dropped, as a proxy would.
    }
  }
  return new Request(url, { method, headers });
}

export function createNodeServer(handler: Handler, opts: NodeServerOptions = {}): http.Server {
  const log = opts.log ?? (() => {});
  const server = http.createServer(
    {
      maxHeaderSize: SERVER_LIMITS.maxHeaderSize,
      headersTimeout: SERVER_LIMITS.headersTimeoutMs,
      requestTimeout: SERVER_LIMITS.requestTimeoutMs,
      keepAliveTimeout: SERVER_LIMITS.keepAliveTimeoutMs,
    },
    async (req, res) => {
      const started = performance.now();
      req.resume(); // GET/HEAD carry no body; drain anything sent so the connection stays usable
      const address = server.address();
      const fallbackHost = address && typeof address === 'object' ? `127.0.0.1:${address.port}` : 'localhost';
      let status = 500;
      try {
        const request = toRequest(req, fallbackHost);
        const response = request instanceof Response ? request : await handler(request, { clientIp: req.socket.remoteAddress });
        status = response.status;
        const headers: Record<string, string> = {};
        response.headers.forEach((value, name) => (headers[name] = value));
        const body = response.body ? Buffer.from(await response.arrayBuffer()) : null;
        res.writeHead(response.status, headers);
        res.end(req.method === 'HEAD' ? undefined : body ?? undefined);
      } catch (err) {
        status = 500;
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/problem+json; charset=utf-8' });
        res.end(JSON.stringify({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'an unexpected error occurred', instance: '' }));
        console.error(`isoatlas serve: ${(err as Error).stack ?? err}`);
      } finally {
        log(`${req.method} ${printable(req.url ?? '')} ${status} ${(performance.now() - started).toFixed(1)}ms`);
      }
    },
  );
  return server;
}

/** Stops accepting connections, lets in-flight requests finish, closes idle keep-alive sockets, and
 * after `graceMs` cuts whatever is left. Resolves when the server has closed. */
export function shutdownGracefully(server: http.Server, graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
  });
}
