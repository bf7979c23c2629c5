// Adapter: Node's http server → the edge handler. Used by `isoatlas serve` (the local server and
// offline mirrors). Hands the handler a light view of IncomingMessage (an EdgeRequest, not a Web
// Request) and writes the EdgeResponse's bytes with one res.end (no Web Response, no body stream);
// a handler not made by createHandler is answered through its Web Response. Logs one line per
// request, and bounds what a slow or oversized client can hold.
import http from 'node:http';
import type { Duplex } from 'node:stream';
import { directHandlerOf, type DirectHandler, type Handler, type RequestContext } from '../handler.js';
import { ALLOW, EdgeResponse, problem } from '../responses.js';
import type { EdgeRequest, RequestTarget } from '../request.js';
import { redactKeys } from '../access/key-format.js';

export interface NodeServerOptions {
  /** One line per request; never includes headers (they may carry an API key). */
  log?: (line: string) => void;
  /** Overrides of SERVER_LIMITS (after those of the environment). */
  limits?: Partial<ServerLimits>;
}

/** Bounds on what one client can hold: size of the request line plus headers (beyond it: 431), time
 * to send the headers and the whole request (beyond it: 408 and the connection is closed), how long
 * an idle keep-alive connection stays open, and how many requests one connection may carry. */
export const SERVER_LIMITS = {
  maxHeaderSize: 16 * 1024,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 30_000,
  keepAliveTimeoutMs: 5_000,
  maxRequestsPerSocket: 1_000,
};
export type ServerLimits = typeof SERVER_LIMITS;

/** Environment variables that override SERVER_LIMITS (`isoatlas serve`; tests use short timeouts). */
export const SERVER_LIMIT_ENV: Record<keyof ServerLimits, string> = {
  maxHeaderSize: 'ISOATLAS_MAX_HEADER_BYTES',
  headersTimeoutMs: 'ISOATLAS_HEADERS_TIMEOUT_MS',
  requestTimeoutMs: 'ISOATLAS_REQUEST_TIMEOUT_MS',
  keepAliveTimeoutMs: 'ISOATLAS_KEEP_ALIVE_TIMEOUT_MS',
  maxRequestsPerSocket: 'ISOATLAS_MAX_REQUESTS_PER_SOCKET',
};

/** SERVER_LIMITS with the environment's overrides; throws on a value that is not a positive integer. */
export function serverLimits(env: Record<string, string | undefined> = process.env, overrides: Partial<ServerLimits> = {}): ServerLimits {
  const limits = { ...SERVER_LIMITS };
  for (const [field, name] of Object.entries(SERVER_LIMIT_ENV) as [keyof ServerLimits, string][]) {
    const raw = env[name];
    if (raw === undefined || raw === '') continue;
    if (!/^[1-9]\d{0,9}$/.test(raw)) throw new Error(`${name} must be a positive integer; got "${raw.slice(0, 30)}"`);
    limits[field] = Number(raw);
  }
  Object.assign(limits, overrides);
  // Node refuses a headers timeout longer than the request timeout.
  if (limits.headersTimeoutMs > limits.requestTimeoutMs) throw new Error(`the headers timeout (${limits.headersTimeoutMs} ms) cannot exceed the request timeout (${limits.requestTimeoutMs} ms)`);
  return limits;
}

function printable(text: string): string {
  // Request targets go into logs: escape control characters so a client cannot forge log lines.
  const redacted = redactKeys(text);
  const cut = redacted.length > 300 ? `${redacted.slice(0, 300)}…` : redacted;
  return cut.replace(/[\u0000-\u001f\u007f]/g, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Header look-ups over Node's parsed headers, answering as a Web Headers object would: names in any
 * case, repeated fields joined with ", " (Node has already merged or dropped repeats of the fields
 * that may not repeat). Node's parser refuses the values a Headers object would refuse. */
class NodeHeaders {
  constructor(private readonly raw: http.IncomingHttpHeaders) {}

  get(name: string): string | null {
    const value = this.raw[name.toLowerCase()];
    if (value === undefined) return null;
    return Array.isArray(value) ? value.join(', ') : value;
  }
}

/** A target of only these characters, with no dot segment, is its own normalized form: the URL
 * parser would percent-encode or resolve nothing in it (`'` only in the path: it is encoded in the
 * query of an http URL). */
const PLAIN_TARGET = /^\/[A-Za-z0-9\-._~!$&'()*+,;=:@\/%]*(\?[A-Za-z0-9\-._~!$&()*+,;=:@\/%?]*)?$/;
const DOT_SEGMENT = /\/\.|%2e/i;

/** `http://<host>` as the URL parser writes it (lower case, no default port), or null for a host it
 * refuses; kept per Host value, of which a server sees few. */
const origins = new Map<string, string | null>();
export function originOf(host: string): string | null {
  let origin = origins.get(host);
  if (origin === undefined) {
    try {
      origin = `http://${new URL(`http://${host}/`).host}`;
    } catch {
      origin = null;
    }
    if (origins.size >= 256) origins.clear();
    origins.set(host, origin);
  }
  return origin;
}

/** The absolute URL a Web Request would hold for this target below `origin` (from originOf):
 * parsed and normalized (dot segments, percent-encoding), with its path and query when they came
 * without parsing; null when the target is not an absolute path. The target is appended to a fixed
 * scheme and host, never resolved against them: a target such as `//evil.example/…` must stay a
 * path, not choose the host that redirects point to. */
export function requestUrl(origin: string, target: string): { url: string; target?: RequestTarget } | null {
  if (!target.startsWith('/')) return null;
  if (PLAIN_TARGET.test(target)) {
    const query = target.indexOf('?');
    const pathname = query === -1 ? target : target.slice(0, query);
    // A bare `?` is an empty query: the URL's search is '' then, as for no query at all.
    if (!DOT_SEGMENT.test(pathname)) return { url: origin + target, target: { pathname, search: query === -1 || query === target.length - 1 ? '' : target.slice(query) } };
  }
  try {
    return { url: new URL(`${origin}${target}`).href };
  } catch {
    return null;
  }
}

/** The EdgeRequest for an incoming message, or the problem to answer when it cannot be one. */
function toRequest(req: http.IncomingMessage, fallbackHost: string): EdgeRequest | EdgeResponse {
  const host = req.headers.host;
  // A Host that is no host name (or none) is replaced by the server's own address.
  const origin = (host && /^[A-Za-z0-9.:[\]-]{1,255}$/.test(host) && originOf(host)) || originOf(fallbackHost)!;
  const headers = new NodeHeaders(req.headers);
  const parsed = requestUrl(origin, req.url ?? '');
  if (!parsed) return problem({ method: 'GET', url: `${origin}/`, headers }, { status: 400, detail: 'the request target must be an absolute path such as /api/v1/' });
  return { method: req.method ?? 'GET', url: parsed.url, headers, target: parsed.target };
}

/** The handler's answer as an EdgeResponse: directly when it is one of ours, else read back from
 * its Web Response. */
function responder(handler: Handler): DirectHandler {
  const direct = directHandlerOf(handler);
  if (direct) return direct;
  return async (request: EdgeRequest, context?: RequestContext) => {
    const response = await handler(request, context);
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    return EdgeResponse.of(response.status, headers, response.body ? new Uint8Array(await response.arrayBuffer()) : null);
  };
}

export function createNodeServer(handler: Handler, opts: NodeServerOptions = {}): http.Server {
  const respond = responder(handler);
  const log = opts.log ?? (() => {});
  const limits = serverLimits(process.env, opts.limits);
  const requestsOn = new WeakMap<object, number>();
  // The server's own address, for requests without a usable Host: asked once, not per request
  // (server.address() is a getsockname call).
  let ownHost: string | undefined;
  const hostOf = (address: ReturnType<http.Server['address']>) => (address && typeof address === 'object' ? `127.0.0.1:${address.port}` : 'localhost');
  const server = http.createServer(
    {
      maxHeaderSize: limits.maxHeaderSize,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default, which would let a slow
      // client hold a connection three times longer than the headers timeout says).
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(limits.headersTimeoutMs / 4))),
    },
    async (req, res) => {
      const started = performance.now();
      const nth = (requestsOn.get(req.socket) ?? 0) + 1; // counted on arrival: pipelined answers finish in any order
      requestsOn.set(req.socket, nth);
      req.resume(); // GET/HEAD carry no body; drain anything sent so the connection stays usable
      const fallbackHost = (ownHost ??= hostOf(server.address()));
      let status = 500;
      try {
        const request = toRequest(req, fallbackHost);
        const response = request instanceof EdgeResponse ? request : await respond(request, { clientIp: req.socket.remoteAddress });
        status = response.status;
        // The last request a connection may carry: `Connection: close` makes Node close it after this
        // answer (its own maxRequestsPerSocket only says close, keeps reading, and answers a bare 503).
        if (nth >= limits.maxRequestsPerSocket) response.set('connection', 'close');
        // The flat [name, value, …] list is what writeHead takes with the least work.
        res.writeHead(response.status, response.fields);
        res.end(req.method === 'HEAD' ? undefined : (response.body ?? undefined));
      } catch (err) {
        status = 500;
        if (!res.headersSent) res.writeHead(500, { 'Content-Type': 'application/problem+json; charset=utf-8' });
        res.end(JSON.stringify({ type: 'about:blank', title: 'Internal Server Error', status: 500, detail: 'an unexpected error occurred', instance: '' }));
        console.error(`isoatlas serve: ${redactKeys(String((err as Error).stack ?? err))}`);
      } finally {
        log(`${req.method} ${printable(req.url ?? '')} ${status} ${(performance.now() - started).toFixed(1)}ms`);
      }
    },
  );
  // Requests Node's parser refuses (oversized head, timeouts, malformed request line) get a problem
  // body too, not Node's bare status line; the connection is closed after it.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) return void socket.destroy();
    const [status, reason, detail]: [number, string, string] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, 'Request Header Fields Too Large', `the request line and headers must fit in ${limits.maxHeaderSize} bytes`]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [408, 'Request Timeout', `the request was not received in time (headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms)`]
          : [400, 'Bad Request', 'the request is not valid HTTP/1.1 (the request target must be an absolute path such as /api/v1/)'];
    // A HEAD request gets no body, or the client would read it as the start of the next response.
    const isHead = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    const answer = problem(bareRequest(isHead ? 'HEAD' : 'GET'), { status, detail, extra: { title: reason } });
    rawAnswer(socket, status, reason, answer);
    log(`- - ${status} ${err.code ?? 'client error'}`);
  });
  // Node hands CONNECT to a 'connect' listener (and drops the connection when there is none), never
  // to the request listener: answer it 405 like any other method instead (found by the fuzzer).
  server.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
    const answer = problem(bareRequest('GET'), { status: 405, detail: 'method CONNECT is not allowed; this API is read-only', headers: { Allow: ALLOW } });
    rawAnswer(socket, 405, 'Method Not Allowed', answer);
    log(`CONNECT ${printable(req.url ?? '')} 405 0.0ms`);
  });
  return server;
}

/** A request with no target to speak of, for the problems Node's parser raises before there is one. */
function bareRequest(method: string): EdgeRequest {
  return { method, url: 'http://localhost/', headers: { get: () => null } };
}

/** Writes a response on a socket Node's server no longer manages, then closes the connection. */
function rawAnswer(socket: Duplex, status: number, reason: string, answer: EdgeResponse): void {
  const body = answer.body ?? new Uint8Array(0);
  // Sorted by name, the order a Web Headers object lists them in.
  const fields = Object.entries(answer.headers).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  const head = [`HTTP/1.1 ${status} ${reason}`, ...fields.map(([name, value]) => `${name}: ${value}`), 'Connection: close', '', ''].join('\r\n');
  socket.on('error', () => {});
  socket.end(Buffer.concat([Buffer.from(head, 'latin1'), body]), () => socket.destroy());
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
