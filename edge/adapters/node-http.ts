// Adapter: Node's http server → the edge handler. Used by `isoatlas serve --http node` (the default
// front end is node-net.ts, tested against this one). Hands the handler a light view of IncomingMessage (an EdgeRequest, not a Web
// Request) and writes the EdgeResponse's bytes with one res.end (no Web Response, no body stream);
// a handler not made by createHandler is answered through its Web Response. Logs one line per
// request, and bounds what a slow or oversized client can hold.
import http from 'node:http';
import type { Duplex } from 'node:stream';
import type { Handler } from '../handler.js';
import { EdgeResponse } from '../responses.js';
import { clientErrorAnswer, connectAnswer, fallbackHostOf, edgeRequest, internalErrorAnswer, millisSince, printable, responder, serverLimits, type NodeServerOptions } from './node-shared.js';

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

export function createNodeServer(handler: Handler, opts: NodeServerOptions = {}): http.Server {
  const respond = responder(handler);
  const log = opts.log ?? (() => {});
  const limits = serverLimits(process.env, opts.limits);
  const requestsOn = new WeakMap<object, number>();
  // The server's own address, for requests without a usable Host: asked once, not per request
  // (server.address() is a getsockname call).
  let ownHost: string | undefined;
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
      const fallbackHost = (ownHost ??= fallbackHostOf(server.address()));
      let status = 500;
      try {
        const request = edgeRequest(req.method ?? 'GET', req.url ?? '', req.headers.host ?? null, new NodeHeaders(req.headers), fallbackHost);
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
        const answer = internalErrorAnswer(err, req.method === 'HEAD');
        if (!res.headersSent) res.writeHead(500, answer.fields);
        res.end(answer.body ?? undefined);
      } finally {
        log(`${req.method} ${printable(req.url ?? '')} ${status} ${millisSince(started)}ms`);
      }
    },
  );
  // Requests Node's parser refuses (oversized head, timeouts, malformed request line) get a problem
  // body too, not Node's bare status line; the connection is closed after it.
  server.on('clientError', (err: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as Duplex & { _httpMessage?: http.ServerResponse })._httpMessage;
    if (err.code === 'ECONNRESET' || !socket.writable || inFlight?.headersSent) return void socket.destroy();
    const kind = err.code === 'HPE_HEADER_OVERFLOW' ? 'head too large' : err.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? 'timeout' : 'malformed';
    const isHead = (err as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    const { status, reason, answer } = clientErrorAnswer(kind, limits, isHead);
    rawAnswer(socket, status, reason, answer);
    log(`- - ${status} ${err.code ?? 'client error'}`);
  });
  // Node hands CONNECT to a 'connect' listener (and drops the connection when there is none), never
  // to the request listener: answer it 405 like any other method instead (found by the fuzzer).
  server.on('connect', (req: http.IncomingMessage, socket: Duplex) => {
    rawAnswer(socket, 405, 'Method Not Allowed', connectAnswer());
    log(`CONNECT ${printable(req.url ?? '')} 405 0.0ms`);
  });
  return server;
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

