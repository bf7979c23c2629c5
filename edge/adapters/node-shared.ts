// What the two Node front ends of the edge handler share (node-http.ts on Node's http server, node-net.ts
// on its own HTTP/1.1 framing over node:net): the limits on what one client may hold, the request URL
// as the URL parser would make it, the handler's answer as an EdgeResponse, and graceful shutdown.
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

const CONTROL = /[\u0000-\u001f\u007f]/;
const CONTROLS = /[\u0000-\u001f\u007f]/g;

export function printable(text: string): string {
  // Request targets go into logs: escape control characters so a client cannot forge log lines.
  const redacted = redactKeys(text);
  const cut = redacted.length > 300 ? `${redacted.slice(0, 300)}…` : redacted;
  // Tested first: a replace with a callback is slow even when nothing matches (the common case).
  if (!CONTROL.test(cut)) return cut;
  return cut.replace(CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Characters a target may hold and be its own normalized form (the URL parser would percent-encode
 * none of them), in the path and in the query (`'` only in the path: it is encoded in the query of an
 * http URL; `?` only in the query). */
const PLAIN_PATH = charClass("A-Za-z0-9-._~!$&'()*+,;=:@/%");
const PLAIN_QUERY = charClass('A-Za-z0-9-._~!$&()*+,;=:@/%?');

function charClass(spec: string): Uint8Array {
  const table = new Uint8Array(128);
  for (let i = 0; i < spec.length; i++) {
    if (spec[i + 1] === '-' && i + 2 < spec.length) {
      for (let c = spec.charCodeAt(i); c <= spec.charCodeAt(i + 2); c++) table[c] = 1;
      i += 2;
    } else table[spec.charCodeAt(i)] = 1;
  }
  return table;
}

/** Where the query of a plain target starts (its `?`, or the target's length when it has none); -1
 * when the URL parser could change the target: a character it would encode, or a dot segment (`/.`,
 * `%2e`) in the path that it would resolve. Read by hand rather than by a regular expression: it is on
 * every request's path. */
function plainTarget(target: string): number {
  let i = 0;
  for (; i < target.length; i++) {
    const ch = target.charCodeAt(i);
    if (ch === 63) break; // '?'
    if (ch > 127 || PLAIN_PATH[ch] === 0) return -1;
    if (ch === 46 && target.charCodeAt(i - 1) === 47) return -1; // '/.'
    if (ch === 37 && target.charCodeAt(i + 1) === 50 && (target.charCodeAt(i + 2) | 32) === 101) return -1; // '%2e', '%2E'
  }
  for (let j = i + 1; j < target.length; j++) {
    const ch = target.charCodeAt(j);
    if (ch > 127 || PLAIN_QUERY[ch] === 0) return -1;
  }
  return i;
}

/** What a Host value may hold: a name or address and a port, nothing the URL parser would resolve. */
const HOST_NAME = /^[A-Za-z0-9.:[\]-]{1,255}$/;

/** `http://<host>` as the URL parser writes it (lower case, no default port), or null for what is no
 * host name (see HOST_NAME) or a host the parser refuses; kept per Host value, of which a server
 * sees few. */
const origins = new Map<string, string | null>();
export function originOf(host: string): string | null {
  let origin = origins.get(host);
  if (origin === undefined) {
    try {
      origin = HOST_NAME.test(host) ? `http://${new URL(`http://${host}/`).host}` : null;
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
  if (target.charCodeAt(0) !== 47) return null; // '/'
  const query = plainTarget(target);
  if (query !== -1) {
    const pathname = query === target.length ? target : target.slice(0, query);
    // A bare `?` is an empty query: the URL's search is '' then, as for no query at all.
    return { url: origin + target, target: { pathname, search: query >= target.length - 1 ? '' : target.slice(query) } };
  }
  try {
    return { url: new URL(`${origin}${target}`).href };
  } catch {
    return null;
  }
}

/** The handler's answer as an EdgeResponse: directly when it is one of ours, else read back from
 * its Web Response. */
export function responder(handler: Handler): DirectHandler {
  const direct = directHandlerOf(handler);
  if (direct) return direct;
  return async (request: EdgeRequest, context?: RequestContext) => {
    const response = await handler(request, context);
    const headers: Record<string, string> = {};
    response.headers.forEach((value, name) => (headers[name] = value));
    return EdgeResponse.of(response.status, headers, response.body ? new Uint8Array(await response.arrayBuffer()) : null);
  };
}

/** A request with no target to speak of, for the problems Node's parser raises before there is one. */
export function bareRequest(method: string): EdgeRequest {
  return { method, url: 'http://localhost/', headers: { get: () => null } };
}

/** The EdgeRequest for a request line's method and target and its headers, or the problem to
 * answer when it cannot be one. A Host that is no host name (or none) is replaced by the server's
 * own address (`fallbackHost`). */
export function edgeRequest(method: string, target: string, host: string | null, headers: EdgeRequest['headers'], fallbackHost: string): EdgeRequest | EdgeResponse {
  const origin = (host && originOf(host)) || originOf(fallbackHost)!;
  const parsed = requestUrl(origin, target);
  if (!parsed) return problem({ method: 'GET', url: `${origin}/`, headers }, { status: 400, detail: 'the request target must be an absolute path such as /api/v1/' });
  return { method, url: parsed.url, headers, target: parsed.target };
}

/** Milliseconds since `start` (a performance.now()), with one decimal, for the request log. */
export function millisSince(start: number): string {
  const tenths = Math.round((performance.now() - start) * 10);
  return `${Math.floor(tenths / 10)}.${tenths % 10}`;
}

/** CONNECT (authority-form target) is answered 405 like any other method the API does not allow. */
export function connectAnswer(): EdgeResponse {
  return problem(bareRequest('GET'), { status: 405, detail: 'method CONNECT is not allowed; this API is read-only', headers: { Allow: ALLOW } });
}

/** The server's own host and port, for requests without a usable Host (asked once per server:
 * address() is a getsockname call). */
export function fallbackHostOf(address: string | { port: number } | null): string {
  return address && typeof address === 'object' ? `127.0.0.1:${address.port}` : 'localhost';
}

/** The answer when answering failed (a bug of ours): the error logged without keys, a 500 problem
 * that tells nothing of it. */
export function internalErrorAnswer(err: unknown, isHead: boolean): EdgeResponse {
  console.error(`isoatlas serve: ${redactKeys(String((err as Error)?.stack ?? err))}`);
  return problem(bareRequest(isHead ? 'HEAD' : 'GET'), { status: 500, detail: 'an unexpected error occurred' });
}

/** The problems for requests refused before they reach the handler. */
export type ClientError = 'head too large' | 'timeout' | 'malformed' | 'version';

export function clientErrorAnswer(kind: ClientError, limits: ServerLimits, isHead: boolean): { status: number; reason: string; answer: EdgeResponse } {
  const [status, reason, detail]: [number, string, string] =
    kind === 'head too large'
      ? [431, 'Request Header Fields Too Large', `the request line and headers must fit in ${limits.maxHeaderSize} bytes`]
      : kind === 'timeout'
        ? [408, 'Request Timeout', `the request was not received in time (headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms)`]
        : kind === 'version'
          ? [505, 'HTTP Version Not Supported', 'this server speaks HTTP/1.1 (and HTTP/1.0)']
          : [400, 'Bad Request', 'the request is not valid HTTP/1.1 (the request target must be an absolute path such as /api/v1/)'];
  // A HEAD request gets no body, or the client would read it as the start of the next response.
  return { status, reason, answer: problem(bareRequest(isHead ? 'HEAD' : 'GET'), { status, detail, extra: { title: reason } }) };
}

/** What graceful shutdown needs of a server: both front ends' servers have it. */
export interface ClosableServer {
  close(done: () => void): unknown;
  closeIdleConnections(): void;
  closeAllConnections(): void;
}

/** Stops accepting connections, lets in-flight requests finish, closes idle keep-alive sockets, and
 * after `graceMs` cuts whatever is left. Resolves when the server has closed. */
export function shutdownGracefully(server: ClosableServer, graceMs = 10_000): Promise<void> {
  return new Promise((resolve) => {
    server.close(() => resolve());
    server.closeIdleConnections();
    setTimeout(() => server.closeAllConnections(), graceMs).unref();
  });
}
