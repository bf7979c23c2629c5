// Adapter: Node's http server → the edge handler (`isoatlas serve`). Each request becomes a Web
// Request, the handler's Web Response is written back; Node's own parser frames the requests. Besides
// Node's server options (head size, timeouts, keep-alive, connections) it bounds what clients that ask
// without reading can make the process hold, and answers what Node refuses with problem+json too.
import http from 'node:http';
import type { Socket } from 'node:net';
import { randomUUID } from 'node:crypto';
import type { Duplex } from 'node:stream';
import type { Handler, RequestContext } from '../handler.js';
import type { AnswerLabel } from '../contract/dispatch.js';
import { ALLOW, PROBLEM_TYPE, REASONS, problemBody } from '../responses.js';
import { redactKeys } from '../access/redaction.js';
import { consoleLog, errorFields, type HandlerLog } from '../handler-log.js';
import { connectionShareProblem, serverLimits, type ServerLimits } from './server-limits.js';
import { type ConnectionCharge, UnsentBudget } from './unsent-budget.js';
import { nextChunk, sendBody } from './send-body.js';
import { clientBucket } from '../access/client-key.js';
import { DEFAULT_ACCESS } from '../access/config.js';
import { REFUSED_TARGET_DETAIL, refusedTarget } from '../contract/targets.js';
import { TrustedFronts } from './forwarded.js';
import { ALLOWED_METHODS, REQUEST_ID_HEADER } from '../contract/http-headers.js';
import { HEADER_LIMITS_DETAIL, type HeaderField, overHeaderLimits } from '../contract/header-limits.js';

/** What the request log records of each request (never a header: one may carry an API key); the
 * logger adds the time and level. */
export interface RequestLogEntry {
  client: string | null;
  method: string;
  /** Path and query, keys redacted, control characters escaped. */
  path: string;
  /** The status, or what became of a request that got none. */
  status: number | string;
  /** Body bytes sent. */
  bytes: number;
  ms: number;
  /** The release that answered (X-Isoatlas-Release), when one did. */
  release: string | null;
  /** What answered it, as the handler said (RequestContext.answeredBy); `other` when nothing did. */
  route: AnswerLabel;
  /** The id a 500's answer names (X-Request-Id, the problem's request_id). */
  request_id: string;
}

export interface NodeServerOptions {
  /** Lines about the server's handling (client errors, connections cut, failures); never a header.
   * Default: failures as JSON lines on stderr, nothing else. */
  log?: HandlerLog;
  /** One entry per request; without it, requests are logged through `log` at info level. */
  logRequest?: (entry: RequestLogEntry) => void;
  /** Overrides of SERVER_LIMITS (after those of the environment). */
  limits?: Partial<ServerLimits>;
  /** Fronts whose X-Forwarded-For names the client (limits are counted per client, not per front). */
  trustedFronts?: TrustedFronts;
  /** IPv6 clients' connections are counted per network of this prefix length (the access config's). */
  ipv6Prefix?: number;
}

/** A connection: the requests it carried, and what its answers hold until its client takes them. */
interface Connection extends ConnectionCharge {
  requests: number;
  /** Requests received whose answer is not yet handed to the system. */
  pending: number;
  /** Each answer's release of what it holds, run when the connection is cut. */
  answers: Set<() => void>;
}

/** What a Host value may hold: a name or address and a port, nothing the URL parser would resolve. */
const HOST_NAME = /^[A-Za-z0-9.:[\]-]{1,255}$/;
/** Room for the head of an answer when its unsent bytes are counted. */
const HEAD_BYTES = 512;

export function createNodeServer(handler: Handler, opts: NodeServerOptions = {}): http.Server {
  const log: HandlerLog = opts.log ?? { ...consoleLog, info: () => {} };
  const report = reporter(log);
  const fronts = opts.trustedFronts ?? new TrustedFronts([]);
  const limits = serverLimits(process.env, opts.limits);
  const connections = new WeakMap<Socket, Connection>();
  const budget = new UnsentBudget(limits);
  // The server's own address, for HTTP/1.0 requests without a usable Host: asked once.
  let ownHost: string | undefined;

  /** One request, inside one boundary: whatever throws while it is answered, written or logged (the
   * handler, the log callback, metrics) becomes a logged 500 carrying the request's id, and the
   * server goes on with the next request. */
  async function respond(req: http.IncomingMessage, res: http.ServerResponse): Promise<void> {
    const started = performance.now();
    const requestId = randomUUID();
    const socket = req.socket;
    const context: RequestContext = { requestId };
    let status: number | string = 500;
    let sentBytes = 0;
    let release: string | null = null;
    let logged = false;
    const record = () => {
      const entry: RequestLogEntry = {
        client: context.clientIp ?? null,
        method: req.method ?? '-',
        path: printable(req.url ?? ''),
        status,
        bytes: sentBytes,
        ms: Number(millisSince(started)),
        release,
        route: context.answeredBy ?? 'other',
        request_id: requestId,
      };
      if (opts.logRequest) opts.logRequest(entry);
      else log.info({ ...entry });
      logged = true;
    };
    try {
      // Requests parsed from what a connection sent before it was cut: nobody is there to answer.
      if (socket.destroyed) return;
      let connection = connections.get(socket);
      if (!connection) {
        const c: Connection = { requests: 0, pending: 0, unsent: 0, progressAt: 0, answers: new Set(), cut: () => {} };
        c.cut = () => {
          socket.destroy();
          for (const settle of c.answers) settle();
        };
        connections.set(socket, (connection = c));
      }
      const conn = connection;
      const nth = ++conn.requests; // counted on arrival: pipelined answers may finish in any order
      conn.pending++;
      /** What this answer holds of the budget (a late write callback must not release another's). */
      let held = 0;
      let settled = false;
      const settle = () => {
        if (settled) return;
        settled = true;
        conn.pending--;
        conn.answers.delete(settle);
        budget.release(conn, held);
        held = 0;
      };
      conn.answers.add(settle);
      const charges = {
        charge(bytes: number) {
          if (settled || !budget.charge(conn, bytes)) return false;
          held += bytes;
          return true;
        },
        release(bytes: number) {
          const n = Math.min(bytes, held);
          held -= n;
          budget.release(conn, n);
        },
      };
      res.once('finish', settle);
      res.once('close', settle);
      req.resume(); // GET/HEAD carry no body; drain anything sent so the connection stays usable
      // A client far ahead of the answers it has taken asks without reading: cut it.
      if (conn.pending > limits.maxPendingPerConnection) {
        socket.destroy();
        return log.warn(
          {
            event: 'connection_cut',
            client: socket.remoteAddress ?? null,
            method: req.method,
            path: printable(req.url ?? ''),
            pending: conn.pending,
          },
          `${req.method} ${printable(req.url ?? '')} closed: ${conn.pending} requests waiting for a client that does not read`,
        );
      }

      context.viaFront = fronts.trusts(socket.remoteAddress);
      // Node joins repeated X-Forwarded-For fields into one value.
      context.clientIp = fronts.clientOf(socket.remoteAddress, req.headers['x-forwarded-for'] as string | undefined);
      ownHost ??= fallbackHostOf(server.address());
      const response = await answer(req, handler, ownHost, context);
      status = response.status;
      release = response.headers.get('x-isoatlas-release');
      // The body is read as the client takes it (send-body.ts); a client gone stops the work.
      const reader = response.body && req.method !== 'HEAD' ? response.body.getReader() : null;
      if (!reader) await response.body?.cancel();
      res.once('close', () => void reader?.cancel().catch(() => {}));
      if (socket.destroyed) {
        status = 'closed by the client';
        void reader?.cancel().catch(() => {});
        return record();
      }
      // Read before the head is written, so that a body failing at once is answered 500; a body the
      // handler holds whole is one chunk.
      const first = reader ? await nextChunk(reader) : null;
      // Answers pile up unsent only for clients that do not read them: beyond its share, or when all
      // connections together hold too much and it has taken nothing for longest, a connection that
      // holds some is closed.
      if (!charges.charge((first?.length ?? 0) + HEAD_BYTES)) {
        status = 'closed: answers waiting for a client that does not read';
        conn.cut();
        return record();
      }
      const fields: string[] = [];
      response.headers.forEach((value, name) => fields.push(name, value));
      // The last request a connection may carry: `Connection: close` makes Node close it after this
      // answer (its own maxRequestsPerSocket only says close, keeps reading, and answers a bare 503).
      if (nth >= limits.maxRequestsPerSocket && !response.headers.has('connection')) fields.push('connection', 'close');
      sentBytes = reader ? Number(response.headers.get('content-length') ?? first?.length ?? 0) : 0;
      // Logged before it is written, so that a log or metrics failure is answered like any other; an
      // answer cut short later gets a line of its own.
      record();
      res.writeHead(response.status, fields);
      const sent = await sendBody(res, first, reader, charges, limits.sendTimeoutMs);
      if (sent.cut) {
        if (sent.cut !== 'client gone') conn.cut();
        if (sent.error) report(`request ${requestId}: its body failed after the answer began`, sent.error, requestId);
        log.warn(
          {
            event: 'answer_cut',
            request_id: requestId,
            client: context.clientIp ?? null,
            path: printable(req.url ?? ''),
            bytes: sent.sent,
            reason: sent.cut,
          },
          `${req.method} ${printable(req.url ?? '')} cut after ${sent.sent} bytes: ${sent.cut}`,
        );
      }
    } catch (err) {
      status = 500;
      sentBytes = 0;
      release = null;
      report(`request ${requestId} failed`, err, requestId);
      try {
        // An answer already begun cannot become another: the connection is cut instead.
        if (res.headersSent || socket.destroyed) res.destroy();
        else {
          const body = problemBody(req.url ?? '/', {
            status: 500,
            detail: 'an unexpected error occurred; it has been logged',
            extra: { request_id: requestId },
          });
          res
            .writeHead(500, { ...problemHead(body), [REQUEST_ID_HEADER]: requestId })
            .end(req.method === 'HEAD' ? undefined : body);
          sentBytes = req.method === 'HEAD' ? 0 : body.length;
        }
      } catch (writeErr) {
        report(`request ${requestId}: its 500 could not be written`, writeErr, requestId);
        res.destroy();
      }
      if (!logged) {
        try {
          record();
        } catch (logErr) {
          report(`request ${requestId} could not be logged`, logErr, requestId);
        }
      }
    }
  }

  const server = http.createServer(
    {
      maxHeaderSize: limits.maxHeaderSize,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      // Node checks the two timeouts above only this often (30 s by default, which would let a slow
      // client hold a connection longer than the headers timeout says).
      connectionsCheckingInterval: Math.max(100, Math.min(5_000, Math.floor(limits.headersTimeoutMs / 4))),
      // Checked below, to answer with a problem body and to refuse two Host fields as well.
      requireHostHeader: false,
    },
    // Every request runs inside respond()'s boundary; this catch only guards the guard.
    (req, res) => void respond(req, res).catch((err) => lastResort(res, err, report)),
  );
  server.maxConnections = limits.maxConnections;
  capConnectionsPerClient(server, limits, fronts, opts.ipv6Prefix ?? DEFAULT_ACCESS.ipv6_prefix, log);

  // Requests Node's parser refuses (oversized head, timeouts, malformed request line) get a problem
  // body too, not Node's bare status line; the connection is closed after it.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
    // Bytes after a request that said `Connection: close` are ignored: its answer is on its way and
    // Node closes the connection after it.
    if (err.code === 'HPE_CLOSED_CONNECTION' && inFlight && !inFlight.writableFinished) return;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) return void socket.destroy();
    const [status, detail] =
      err.code === 'HPE_HEADER_OVERFLOW'
        ? [431, `the request line and headers must fit in ${limits.maxHeaderSize} bytes`]
        : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
          ? [
              408,
              `the request was not received in time (headers within ${limits.headersTimeoutMs} ms, the whole request within ${limits.requestTimeoutMs} ms)`,
            ]
          : [400, 'the request is not valid HTTP/1.1 (the request target must be an absolute path such as /api/v1/)'];
    // A HEAD request gets no body, or the client would read it as the start of the next response.
    const isHead = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    rawAnswer(socket, status, problemBody('/', { status, detail }), isHead);
    log.info(
      {
        event: 'client_error',
        client: (socket as Socket).remoteAddress ?? null,
        status,
        code: err.code ?? 'client error',
      },
      `${status} ${err.code ?? 'client error'}`,
    );
  });
  // Node hands CONNECT to a 'connect' listener (and drops the connection when there is none), never
  // to the request listener: answer it 405 like any other method instead.
  server.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
    rawAnswer(
      socket,
      405,
      problemBody('/', { status: 405, detail: 'method CONNECT is not allowed; this API is read-only' }),
      false,
      { Allow: ALLOW },
    );
    log.info(
      {
        client: req.socket.remoteAddress ?? null,
        method: 'CONNECT',
        path: printable(req.url ?? ''),
        status: 405,
        bytes: 0,
        ms: 0,
        release: null,
        route: 'other',
      },
      'CONNECT refused',
    );
  });
  return server;
}

/** One client may hold only its share of the connections, so that it cannot take them all: a
 * connection beyond it is answered 429 and closed, before Node reads a request from it. A trusted
 * front's connections carry many clients, whom the front caps itself. */
function capConnectionsPerClient(
  server: http.Server,
  limits: ServerLimits,
  fronts: TrustedFronts,
  ipv6Prefix: number,
  log: HandlerLog,
): void {
  const open = new Map<string, number>();
  const refusal = connectionShareProblem(limits);
  const body = problemBody('/', refusal);
  // Before Node's own listener, which starts reading requests from the socket.
  server.prependListener('connection', (socket: Socket) => {
    if (fronts.trusts(socket.remoteAddress)) return;
    const client = clientBucket(socket.remoteAddress ?? 'unknown', ipv6Prefix);
    const count = (open.get(client) ?? 0) + 1;
    open.set(client, count);
    socket.once('close', () => {
      const left = open.get(client)! - 1;
      if (left > 0) open.set(client, left);
      else open.delete(client);
    });
    if (count > limits.maxConnectionsPerAddress) {
      rawAnswer(socket, refusal.status, body, false, refusal.headers);
      // One line when a client reaches its share, not one per connection refused.
      if (count === limits.maxConnectionsPerAddress + 1)
        log.warn(
          { event: 'connections_over_share', client, status: refusal.status, limit: limits.maxConnectionsPerAddress },
          `${refusal.status} connections from ${client} over its share (${limits.maxConnectionsPerAddress})`,
        );
    }
  });
}

/** Logs a failure of the server's own with its stack (the logger redacts keys); never throws. A
 * logger that fails itself is bypassed for a line on stderr. */
function reporter(log: HandlerLog): (what: string, err: unknown, requestId?: string) => void {
  return (what, err, requestId) => {
    const fields = { event: 'request_failed', ...(requestId ? { request_id: requestId } : {}), ...errorFields(err) };
    try {
      log.error(fields, what);
    } catch {
      try {
        consoleLog.error(fields, what);
      } catch {
        // stderr itself failed: nothing else to tell it to
      }
    }
  };
}

/** What becomes of a request whose boundary itself failed: it is reported and its connection cut. */
function lastResort(res: http.ServerResponse, err: unknown, report: ReturnType<typeof reporter>): void {
  report('a request failed outside its boundary', err);
  res.destroy();
}

/** The handler's answer to a request Node has parsed, or the 400/405 for one that cannot be a Web
 * Request. */
async function answer(
  req: http.IncomingMessage,
  handler: Handler,
  ownHost: string,
  context: RequestContext,
): Promise<Response> {
  const refuse = (status: number, detail: string, headers: Record<string, string> = {}) => {
    const body = problemBody(req.url ?? '/', { status, detail });
    return new Response(body as Uint8Array<ArrayBuffer>, {
      status,
      headers: { ...problemHead(body), ...headers, connection: 'close' },
    });
  };
  // Past the header bounds the CDN's firewall sees (header-limits.ts): refused here as the CDN refuses
  // it, so a mirror answers the same requests. Behind a trusted front, X-Forwarded-For is the front's
  // own (it replaces the client's), so it is not the client's to count.
  if (overHeaderLimits(headerFields(req.rawHeaders, context.viaFront === true)))
    return refuse(431, HEADER_LIMITS_DETAIL);
  const hosts = countHosts(req.rawHeaders);
  // RFC 9112 §3.2: an HTTP/1.1 request without Host, or with more than one, is answered 400.
  if (req.httpVersion !== '1.0' && hosts !== 1)
    return refuse(
      400,
      hosts === 0
        ? 'an HTTP/1.1 request must carry a Host header'
        : 'a request must carry one Host header, not several',
    );
  // Checked as sent: the URL parser below would turn a backslash into `/` and resolve `..`.
  const target = req.url ?? '';
  if (refusedTarget(target)) return refuse(400, REFUSED_TARGET_DETAIL);
  const host = req.headers.host && HOST_NAME.test(req.headers.host) ? req.headers.host : ownHost;
  let request: Request;
  try {
    // The target is appended to a fixed scheme and host, never resolved against them: `//evil/…`
    // stays a path.
    request = new Request(`http://${host}${target}`, { method: req.method, headers: headersOf(req) });
  } catch {
    // The Fetch standard refuses some methods (TRACE, TRACK) outright; none is allowed here.
    if (!(ALLOWED_METHODS as readonly string[]).includes(req.method ?? ''))
      return refuse(405, `method ${req.method} is not allowed; this API is read-only`, { allow: ALLOW });
    return refuse(400, 'the request target or a header is not valid');
  }
  return handler(request, context);
}

function headersOf(req: http.IncomingMessage): Headers {
  const headers = new Headers();
  for (const [name, value] of Object.entries(req.headers)) {
    if (value === undefined) continue;
    for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
  }
  return headers;
}

/** The header fields as sent, from Node's raw list (names and values alternate), less the front's. */
function headerFields(raw: string[], viaFront: boolean): HeaderField[] {
  const fields: HeaderField[] = [];
  for (let i = 0; i < raw.length; i += 2)
    if (!viaFront || raw[i].toLowerCase() !== 'x-forwarded-for') fields.push([raw[i], raw[i + 1]]);
  return fields;
}

function countHosts(raw: string[]): number {
  let n = 0;
  for (let i = 0; i < raw.length; i += 2) if (raw[i].length === 4 && raw[i].toLowerCase() === 'host') n++;
  return n;
}

/** Header fields of a problem answer with `body`. */
function problemHead(body: Uint8Array): Record<string, string> {
  return {
    'content-type': PROBLEM_TYPE,
    'content-length': String(body.length),
    'cache-control': 'no-store',
    'access-control-allow-origin': '*',
  };
}

/** Writes an answer on a socket Node's server no longer manages, then closes the connection. */
function rawAnswer(
  socket: Duplex,
  status: number,
  body: Uint8Array,
  isHead: boolean,
  extra: Record<string, string> = {},
): void {
  const fields = { ...problemHead(body), ...extra, date: new Date().toUTCString(), connection: 'close' };
  const head = [
    `HTTP/1.1 ${status} ${REASONS[status] ?? 'Error'}`,
    ...Object.entries(fields).map(([name, value]) => `${name}: ${value}`),
    '',
    '',
  ].join('\r\n');
  socket.on('error', () => {});
  socket.end(isHead ? Buffer.from(head, 'latin1') : Buffer.concat([Buffer.from(head, 'latin1'), body]), () =>
    socket.destroy(),
  );
}

// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this escapes.
const CONTROLS = /[\u0000-\u001f\u007f]/g;
// biome-ignore lint/suspicious/noControlCharactersInRegex: control characters are what this looks for.
const HAS_CONTROL = /[\u0000-\u001f\u007f]/;

/** A request target as it may go into a log: keys redacted, control characters escaped (a client
 * cannot forge log lines), cut short. */
export function printable(text: string): string {
  const redacted = redactKeys(text);
  const cut = redacted.length > 300 ? `${redacted.slice(0, 300)}…` : redacted;
  // Most targets hold no control character: tested before a copy is made.
  if (!HAS_CONTROL.test(cut)) return cut;
  return cut.replace(CONTROLS, (c) => `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`);
}

/** Milliseconds since `start` (a performance.now()), with one decimal, for the request log. */
function millisSince(start: number): string {
  return (performance.now() - start).toFixed(1);
}

/** The server's own host and port, for requests without a usable Host. */
function fallbackHostOf(address: string | { port: number } | null): string {
  return address && typeof address === 'object' ? `127.0.0.1:${address.port}` : 'localhost';
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
