// Adapter: the edge handler on its own HTTP/1.1 framing over node:net: the default front end of
// `isoatlas serve` (`--http node` selects node-http.ts instead). Why not Node's http server: it caps
// what any server on it can do (a bare node:http server answering from memory reaches only 0.37–0.7×
// nginx on our machines, a bare node:net one 0.8–1.4×), and on the same handler this framing answers
// 2.4–2.8× its requests/s (BENCHMARKS.md, section 3).
//
// It speaks the part of HTTP/1.1 a read-only JSON API needs, strictly, and refuses the rest:
// - request line `METHOD SP origin-form-target SP HTTP/1.x`, header lines `token: value` ending in
//   CRLF; anything else (obs-fold, bare LF, space before the colon, control characters, two Host
//   headers, both Content-Length and Transfer-Encoding) is a 400 and the connection is closed;
// - keep-alive (HTTP/1.1 unless `Connection: close`; HTTP/1.0 only with `Connection: keep-alive`) and
//   pipelining, answered in order, one request at a time per connection;
// - a Content-Length body is read and dropped (no route takes a body); a Transfer-Encoding body is not
//   parsed: the request is answered, the connection closed after it, and what follows is dropped;
// - the limits of SERVER_LIMITS (431, 408, idle and per-connection bounds) as node-http.ts applies them.
//
// Answers made at once are held until the end of the event loop's turn and then written one after
// another (see holdAnswer): the loop reads every connection that is ready, answers each, then makes
// the write calls together. Measured on a gene record (wrk, 10 connections, pinned): 36.2k against
// 28.3k requests/s, the system time per request down from 14.3 to 9.0 µs and the user time from 21.0
// to 17.8 µs, as the kernel's send path and our own code each run many times in a row.
import net from 'node:net';
import { STATUS_CODES } from 'node:http';
import type { Handler } from '../handler.js';
import { EdgeResponse, indexOfField } from '../responses.js';
import type { EdgeRequest } from '../request.js';
import {
  clientErrorAnswer,
  connectAnswer,
  edgeRequest,
  fallbackHostOf,
  internalErrorAnswer,
  millisSince,
  printable,
  responder,
  serverLimits,
  type ClientError,
  type ClosableServer,
  type NodeServerOptions,
  type ServerLimits,
} from './node-shared.js';

const TOKEN = "[!#$%&'*+\\-.^_`|~0-9A-Za-z]+";
const METHOD = new RegExp(`^${TOKEN}$`);
/** The header lines after the request line, each `\r\nname:value`, then a closing `\r\n`. Linear:
 * a token cannot hold ':' and a value cannot hold CR or LF. */
const HEADER_BLOCK = new RegExp(`^(?:\\r\\n${TOKEN}:[\\t\\x20-\\x7e\\x80-\\xff]*)*\\r\\n$`);
const HEAD_END = Buffer.from('\r\n\r\n', 'latin1');
/** Bytes a client may send ahead (pipelined) while its current request is answered, before the
 * connection stops being read. */
const MAX_AHEAD = 64 * 1024;
/** Bytes of answers waiting for a slow reader before the connection's next request waits for it. */
const MAX_UNSENT = 256 * 1024;
/** How long a connection being closed may linger to drain what the client still sends. */
const LINGER_MS = 2_000;

/** Header look-ups over the raw header lines, answering as a Web Headers object would: names in any
 * case, optional whitespace around values trimmed, repeated fields joined with ", ". */
class RawHeaders {
  /** The block in lower case, for finding names. */
  readonly lower: string;

  constructor(private readonly block: string) {
    this.lower = block.toLowerCase();
  }

  has(name: string): boolean {
    return this.lower.indexOf(keyOf(name)) !== -1;
  }

  /** How many fields of this (lower-case) name there are. */
  count(name: string): number {
    const key = keyOf(name);
    let n = 0;
    for (let at = this.lower.indexOf(key); at !== -1; at = this.lower.indexOf(key, at + key.length)) n++;
    return n;
  }

  get(name: string): string | null {
    const key = keyOf(name);
    let at = this.lower.indexOf(key);
    let value: string | null = null;
    while (at !== -1) {
      const start = at + key.length;
      const end = this.lower.indexOf('\r\n', start);
      const field = trimOws(this.block, start, end);
      value = value === null ? field : `${value}, ${field}`;
      at = this.lower.indexOf(key, end);
    }
    return value;
  }
}

/** What starts a field of this name in a lower-cased block (`\r\nname:`); made once per name, as
 * the names asked for are few (the framing's and the handler's). */
const keys = new Map<string, string>();
function keyOf(name: string): string {
  let key = keys.get(name);
  if (key === undefined) {
    key = `\r\n${name.toLowerCase()}:`;
    if (keys.size >= 256) keys.clear();
    keys.set(name, key);
  }
  return key;
}

/** block[start, end) without leading and trailing spaces and tabs (String.trim would also take
 * characters such as U+00A0, which is an obs-text byte here). */
function trimOws(block: string, start: number, end: number): string {
  while (start < end && (block.charCodeAt(start) === 32 || block.charCodeAt(start) === 9)) start++;
  while (end > start && (block.charCodeAt(end - 1) === 32 || block.charCodeAt(end - 1) === 9)) end--;
  return block.slice(start, end);
}

/** The parts of a request line `METHOD SP target SP HTTP/d.d` (head[0, end)), or null when it is
 * not one. Origin-form or not, the target is checked by edgeRequest; here only: visible ASCII, no
 * space. Read by hand rather than by a regular expression: it is on every request's path. */
function requestLine(head: string, end: number): { method: string; target: string; major: number; minor: number } | null {
  const space = head.indexOf(' ');
  const version = end - 9; // the space before `HTTP/d.d`
  if (space <= 0 || version <= space + 1 || head.charCodeAt(version) !== 32 || !head.startsWith('HTTP/', version + 1) || head.charCodeAt(end - 2) !== 46) return null;
  const major = head.charCodeAt(end - 3) - 48;
  const minor = head.charCodeAt(end - 1) - 48;
  if (major < 0 || major > 9 || minor < 0 || minor > 9) return null;
  for (let i = space + 1; i < version; i++) {
    const ch = head.charCodeAt(i);
    if (ch < 0x21 || ch > 0x7e) return null;
  }
  const method = head.slice(0, space);
  if (method !== 'GET' && method !== 'HEAD' && !METHOD.test(method)) return null;
  return { method, target: head.slice(space + 1, version), major, minor };
}

const hasToken = (list: string, token: string) => list.split(',').some((t) => t.trim().toLowerCase() === token);

/** A request's header lines, read: what the framing needs of them, and the look-ups the handler makes. */
interface Fields {
  /** The lines as received (`\r\nname:value` each), by which they are recognized when sent again. */
  lines: string;
  headers: RawHeaders;
  chunked: boolean;
  bodyLength: number;
  connection: string | null;
  host: string | null;
}

/** The header lines read, or null when they are malformed or frame the request ambiguously (a length
 * that is not one plain number, a length and a transfer coding, two Hosts). */
function readFields(lines: string): Fields | null {
  const block = `${lines}\r\n`;
  if (!HEADER_BLOCK.test(block)) return null;
  const headers = new RawHeaders(block);
  // Framing: a body's length must be one plain number; a request may not give both (smuggling).
  const chunked = headers.has('transfer-encoding');
  let bodyLength = 0;
  if (headers.has('content-length')) {
    const length = headers.get('content-length')!;
    if (chunked || !/^\d{1,15}$/.test(length)) return null;
    bodyLength = Number(length);
  }
  if (headers.count('host') > 1) return null;
  return { lines, headers, chunked, bodyLength, connection: headers.get('connection'), host: headers.get('host') };
}

const STATUS_LINES = new Map<number, string>();
function statusLine(status: number): string {
  let line = STATUS_LINES.get(status);
  if (line === undefined) STATUS_LINES.set(status, (line = `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? 'Unknown'}\r\n`));
  return line;
}

/** One client connection: its unparsed bytes and where it stands. */
interface Connection {
  socket: net.Socket;
  ip: string | undefined;
  /** Bytes received and not yet parsed. */
  pending: Buffer | null;
  /** A request is being answered (the handler runs or its answer waits for the socket). */
  busy: boolean;
  /** Bytes of the current request's body still to be read and dropped. */
  bodyLeft: number;
  /** Requests read on this connection. */
  served: number;
  /** When the first byte of the request being received arrived (0: none yet). */
  started: number;
  /** When the connection last became idle between requests. */
  idleSince: number;
  /** Closing: the last answer is written; whatever the client still sends is dropped. */
  lingerSince: number;
  /** The client has half-closed its side. */
  peerEnded: boolean;
  paused: boolean;
  /** The header lines of the connection's last request, read. */
  fields: Fields | null;
  /** Its answer held for the end of this turn of the event loop (see holdAnswer). */
  held: Buffer | null;
}

export class EdgeNetServer extends net.Server implements ClosableServer {
  private readonly clients = new Set<Connection>();
  private readonly limits: ServerLimits;
  private readonly respond: ReturnType<typeof responder>;
  private readonly encoder: AnswerEncoder;
  private readonly log: (line: string) => void;
  private readonly sweeper: ReturnType<typeof setInterval>;
  private shuttingDown = false;
  private ownHost: string | undefined;
  /** Connections whose answers are held, in the order the answers were made. */
  private readonly holding: Connection[] = [];
  private writeScheduled = false;
  private readonly writeHeldLater = () => {
    this.writeScheduled = false;
    this.writeHeld();
  };

  constructor(handler: Handler, opts: NodeServerOptions = {}) {
    super({ allowHalfOpen: true, noDelay: true });
    this.respond = responder(handler);
    this.log = opts.log ?? (() => {});
    this.limits = serverLimits(process.env, opts.limits);
    this.encoder = new AnswerEncoder(this.limits);
    this.on('connection', (socket: net.Socket) => this.accept(socket));
    // Deadlines are checked on a tick, not with a timer per request (as Node's http server does).
    const every = Math.max(100, Math.min(5_000, Math.floor(this.limits.headersTimeoutMs / 4)));
    this.sweeper = setInterval(() => this.sweep(), every);
    this.sweeper.unref();
    this.on('close', () => clearInterval(this.sweeper));
  }

  /** Stops accepting connections; those answering a request close once it is answered. */
  override close(done?: (err?: Error) => void): this {
    this.shuttingDown = true;
    return super.close(done);
  }

  closeIdleConnections(): void {
    this.writeHeld();
    for (const c of this.clients) if (!c.busy && c.pending === null) c.socket.destroy();
  }

  closeAllConnections(): void {
    this.writeHeld();
    for (const c of this.clients) c.socket.destroy();
  }

  private accept(socket: net.Socket): void {
    if (this.shuttingDown) return void socket.destroy();
    const now = Date.now();
    const c: Connection = { socket, ip: socket.remoteAddress, pending: null, busy: false, bodyLeft: 0, served: 0, started: 0, idleSince: now, lingerSince: 0, peerEnded: false, paused: false, fields: null, held: null };
    this.clients.add(c);
    socket.on('data', (chunk: Buffer) => this.received(c, chunk));
    socket.on('end', () => {
      c.peerEnded = true;
      if (c.lingerSince) return void socket.destroy();
      if (!c.busy) this.next(c);
    });
    socket.on('error', () => socket.destroy()); // a reset or a broken pipe: nothing to answer
    socket.on('close', () => this.clients.delete(c));
  }

  private received(c: Connection, chunk: Buffer): void {
    if (c.lingerSince) return;
    if (c.bodyLeft > 0) {
      if (chunk.length <= c.bodyLeft) {
        c.bodyLeft -= chunk.length;
        if (c.bodyLeft === 0) this.bodyRead(c);
        return;
      }
      chunk = chunk.subarray(c.bodyLeft);
      c.bodyLeft = 0;
      c.started = 0;
    }
    if (c.pending === null) {
      c.pending = chunk;
      if (c.started === 0) c.started = Date.now();
    } else c.pending = Buffer.concat([c.pending, chunk]);
    if (!c.busy) this.next(c);
    else if (c.pending.length > MAX_AHEAD && !c.paused) {
      c.paused = true;
      c.socket.pause();
    }
  }

  /** The current request's body has been read (and dropped). */
  private bodyRead(c: Connection): void {
    c.started = 0;
    if (!c.busy) this.next(c);
  }

  /** Parses and answers the requests received on `c`, one at a time. */
  private next(c: Connection): void {
    while (!c.busy && !c.lingerSince && c.bodyLeft === 0 && c.pending !== null) {
      const buf = c.pending;
      let from = 0;
      // An empty line before a request line is ignored (RFC 9112 §2.2).
      while (from + 1 < buf.length && buf[from] === 13 && buf[from + 1] === 10) from += 2;
      const end = buf.indexOf(HEAD_END, from);
      if (end === -1 ? buf.length - from > this.limits.maxHeaderSize : end - from > this.limits.maxHeaderSize) {
        return this.refuse(c, 'head too large', buf);
      }
      if (end === -1) {
        if (from === buf.length) c.pending = null;
        break;
      }
      const head = buf.toString('latin1', from, end);
      c.pending = end + 4 < buf.length ? buf.subarray(end + 4) : null;
      this.request(c, head);
    }
    if (c.paused && !c.busy) {
      c.paused = false;
      c.socket.resume();
    }
    if (c.peerEnded && !c.busy && !c.lingerSince) this.closeAfterAnswers(c);
  }

  /** Reads one request head and hands the request to the handler. */
  private request(c: Connection, head: string): void {
    const lineEnd = head.indexOf('\r\n');
    const line = requestLine(head, lineEnd === -1 ? head.length : lineEnd);
    if (!line) return this.refuse(c, 'malformed', head);
    const { method, target, major, minor } = line;
    if (major !== 1) return this.refuse(c, 'version', head);
    // Only origin-form targets (and CONNECT's authority) are requests to this server.
    if (target.charCodeAt(0) !== 47 && method !== 'CONNECT') return this.refuse(c, 'malformed', head);
    const lines = lineEnd === -1 ? '' : head.slice(lineEnd);
    // A client sends the same header lines request after request (only the target changes): they are
    // read once per connection while they stay the same.
    let fields = c.fields;
    if (fields === null || fields.lines !== lines) {
      fields = readFields(lines);
      if (fields === null) return this.refuse(c, 'malformed', head);
      c.fields = fields;
    }
    const { headers, chunked } = fields;
    let bodyLength = fields.bodyLength;

    c.served++;
    const connection = fields.connection;
    let keepAlive = minor === 0 ? connection !== null && hasToken(connection, 'keep-alive') : connection === null || !hasToken(connection, 'close');
    // After a body it does not parse, after its last allowed request, or while shutting down.
    if (chunked || c.served >= this.limits.maxRequestsPerSocket || this.shuttingDown) keepAlive = false;
    if (bodyLength > 0 && c.pending !== null) {
      const taken = Math.min(bodyLength, c.pending.length);
      c.pending = taken < c.pending.length ? c.pending.subarray(taken) : null;
      bodyLength -= taken;
    }
    c.bodyLeft = bodyLength;
    if (c.started === 0) c.started = Date.now();
    c.busy = true;

    const started = performance.now();
    const request: EdgeRequest | EdgeResponse =
      method === 'CONNECT' ? connectAnswer() : edgeRequest(method, target, fields.host, headers, (this.ownHost ??= fallbackHostOf(this.address())));
    // CONNECT, or a path the URL parser refuses: answered, and the connection closed.
    if (request instanceof EdgeResponse) return this.answer(c, method, target, request, false, started);
    let answered: EdgeResponse | Promise<EdgeResponse>;
    try {
      answered = this.respond(request, { clientIp: c.ip });
    } catch (err) {
      return this.failed(c, method, target, err, started);
    }
    // Most answers come at once (the handler's respond): written now, without a turn of the loop.
    if (answered instanceof EdgeResponse) return this.answer(c, method, target, answered, keepAlive, started);
    answered.then(
      (response) => this.answer(c, method, target, response, keepAlive, started),
      (err: unknown) => this.failed(c, method, target, err, started),
    );
  }

  private answer(c: Connection, method: string, target: string, response: EdgeResponse, keepAlive: boolean, started: number): void {
    // A pipelined request's answer: the one before it, held, goes first and leaves the output buffer
    // before this one is encoded into it.
    if (c.held !== null) this.writeHeld();
    let bytes: Encoded;
    try {
      bytes = this.encoder.encode(response, method === 'HEAD' ? null : response.body, keepAlive);
    } catch (err) {
      return this.failed(c, method, target, err, started);
    }
    this.log(`${method} ${printable(target)} ${response.status} ${millisSince(started)}ms`);
    this.send(c, bytes, keepAlive);
  }

  private failed(c: Connection, method: string, target: string, err: unknown, started: number): void {
    const response = internalErrorAnswer(err, method === 'HEAD');
    this.log(`${method} ${printable(target)} 500 ${millisSince(started)}ms`);
    this.send(c, this.encoder.encode(response, response.body, false), false);
  }

  /** Writes one answer and moves on to the connection's next request (or closes it). */
  private send(c: Connection, bytes: Encoded, keepAlive: boolean): void {
    const socket = c.socket;
    c.busy = false;
    // The request timeout runs on while a body is still to come; else the next request's starts.
    if (c.bodyLeft === 0) c.started = c.pending === null ? 0 : Date.now();
    if (socket.destroyed) return;
    if (bytes.body === null && keepAlive) this.holdAnswer(c, bytes.bytes);
    else {
      this.writeHeld(); // the answers made before this one go first
      if (bytes.body === null) this.encoder.write(socket, bytes.bytes);
      else {
        // A body too large for the output buffer: one writev for the head (bytes of its own) and the
        // body.
        socket.cork();
        socket.write(bytes.bytes);
        socket.write(bytes.body);
        socket.uncork();
      }
      this.encoder.rewind();
    }
    if (!keepAlive) return this.closeAfterAnswers(c);
    c.idleSince = Date.now();
    if (c.bodyLeft > 0) return; // next() runs once the body is read
    if (socket.writableLength > MAX_UNSENT) {
      c.busy = true;
      socket.once('drain', () => {
        c.busy = false;
        this.next(c);
      });
      return;
    }
    this.next(c);
  }

  /** Holds an answer (in the output buffer) to be written at the end of this turn of the event loop,
   * with the others made in the same turn. The connection has no answer held yet (see answer). */
  private holdAnswer(c: Connection, bytes: Buffer): void {
    c.held = bytes;
    this.holding.push(c);
    if (!this.writeScheduled) {
      this.writeScheduled = true;
      // Immediates run once the loop has dealt with every connection that was ready (and Node does
      // not wait for more events while one is pending).
      setImmediate(this.writeHeldLater);
    }
  }

  /** Writes the held answers, in the order they were made. */
  private writeHeld(): void {
    const holding = this.holding;
    if (holding.length === 0) return;
    for (let i = 0; i < holding.length; i++) {
      const c = holding[i];
      const bytes = c.held!;
      c.held = null;
      if (!c.socket.destroyed) this.encoder.write(c.socket, bytes);
    }
    holding.length = 0;
    this.encoder.rewind();
  }

  /** Refuses what cannot be a request (answering with a problem) and closes the connection. */
  private refuse(c: Connection, kind: ClientError, received: Buffer | string): void {
    const isHead = (typeof received === 'string' ? received.slice(0, 5) : received.toString('latin1', 0, 5)) === 'HEAD ';
    const { status, answer } = clientErrorAnswer(kind, this.limits, isHead);
    this.log(`- - ${status} ${kind}`);
    c.pending = null;
    this.send(c, this.encoder.encode(answer, isHead ? null : answer.body, false), false);
  }

  /** Ends the connection after what is written; drops what the client still sends. */
  private closeAfterAnswers(c: Connection): void {
    if (c.held !== null) this.writeHeld();
    c.lingerSince = Date.now();
    c.pending = null;
    c.busy = false;
    if (c.paused) c.socket.resume();
    c.socket.end();
    if (c.peerEnded) c.socket.destroySoon();
  }

  /** Applies the deadlines of SERVER_LIMITS. */
  private sweep(): void {
    const now = Date.now();
    const { headersTimeoutMs, requestTimeoutMs, keepAliveTimeoutMs } = this.limits;
    for (const c of this.clients) {
      if (c.lingerSince) {
        if (now - c.lingerSince > LINGER_MS) c.socket.destroy();
      } else if (c.bodyLeft > 0) {
        // A body that trickles: the request was answered; the connection is cut.
        if (now - c.started > requestTimeoutMs) c.socket.destroy();
      } else if (c.busy) {
        continue;
      } else if (c.started) {
        if (now - c.started > headersTimeoutMs) this.refuse(c, 'timeout', c.pending ?? '');
      } else if (now - c.idleSince > (c.served === 0 ? headersTimeoutMs : keepAliveTimeoutMs)) {
        c.socket.destroy();
      }
    }
  }
}

/** An answer encoded: `bytes` holds the head, and the body after it when it fits (in the output
 * buffer); otherwise `bytes` is the head alone, in bytes of its own, and `body` is written after it. */
interface Encoded {
  bytes: Buffer;
  body: Uint8Array | null;
}

/** The largest answer copied whole into the output buffer: every file of a demo tree is (the largest
 * is 25 KB); a larger body is written after the head. */
const WHOLE_ANSWER_BYTES = 64 * 1024;
/** The output buffer: room for the answers of one turn of the event loop (see holdAnswer). Measured
 * on a 15.5 KB gene record: 34.6k requests/s with 1 MiB, 25.2k with 64 KiB, which a turn's ten
 * answers overfilled, so that a new buffer was made every few answers. */
const OUTPUT_BYTES = 1024 * 1024;

/** Encodes answers (the status line, the header fields with Date, Connection and the body's length,
 * the body) one after another into an output buffer, so most answers leave in one write call: the
 * cheapest way through a Node socket (measured: 12% more requests/s on a gene record than a corked
 * write of the head and the body, which goes through the stream's buffering and a writev).
 *
 * The buffer is used again from its start once every answer in it has been written (see rewind), unless
 * a socket did not take all of its bytes at once: that socket holds them until they are sent, so the
 * buffer is then only filled on, and replaced by a new one when full. A socket that still holds
 * unsent bytes is given copies (see write): a reader that falls behind keeps at most the one buffer
 * it was writing from when it did, not every buffer made while it does not read. */
export class AnswerEncoder {
  private buffer = Buffer.allocUnsafeSlow(OUTPUT_BYTES);
  /** Bytes of the buffer holding answers since it was last rewound. */
  private used = 0;
  /** A socket holds bytes of the buffer: it is not rewound. */
  private pinned = false;
  /** The status line and shared header lines of an answer, by its shared field list (a file's
   * answer: the same on every request for it): encoded once per list, forgotten with it. */
  private readonly starts = new WeakMap<readonly string[], { status: number; bytes: Buffer; hasLength: boolean }>();
  /** `Date`, `Connection` and the blank line, as of `second`: [closing, keep-alive]. */
  private ends: [Buffer, Buffer] | null = null;
  private second = -1;

  constructor(private readonly limits: ServerLimits) {}

  /** The answer's bytes; throws when a header value cannot be written (see writeField). The bytes
   * stay valid until rewind() is called: write them, and the others encoded, before that. */
  encode(response: EdgeResponse, body: Uint8Array | null, keepAlive: boolean): Encoded {
    const { status } = response;
    const start = this.start(status, response.sharedFields);
    const own = response.ownFields;
    const end = this.end(keepAlive);
    // The handler gives the length of every body it makes (HEAD answers included): what has none here
    // is bodiless (a redirect), as GET and HEAD alike.
    let length = -1;
    if (!start.hasLength && status !== 204 && status !== 304 && indexOfField(own, 'content-length') === -1) length = response.body?.length ?? 0;
    // The per-request lines are written byte by byte, not built as a string and encoded: a string made
    // by concatenation would be flattened again on its way into the buffer.
    let headSize = start.bytes.length + end.length + (length === -1 ? 0 : CONTENT_LENGTH.length + 12);
    for (let i = 0; i < own.length; i += 2) headSize += own[i].length + own[i + 1].length + 4;
    const bodySize = body === null ? 0 : body.length;
    const whole = headSize + bodySize <= WHOLE_ANSWER_BYTES;
    const size = whole ? headSize + bodySize : headSize;
    let out = this.buffer;
    // The head of an answer whose body is written apart gets bytes of its own: a corked socket keeps
    // them until it is uncorked, and a socket that does not take them all keeps them longer.
    if (!whole) out = Buffer.allocUnsafe(size);
    else if (this.used + size > out.length) {
      // Full of answers not yet written, or held by sockets: this one goes into a new buffer.
      out = this.buffer = Buffer.allocUnsafeSlow(OUTPUT_BYTES);
      this.used = 0;
      this.pinned = false;
    }
    const from = whole ? this.used : 0;
    if (whole) this.used += size;
    out.set(start.bytes, from);
    let at = from + start.bytes.length;
    for (let i = 0; i < own.length; i += 2) at = writeField(out, at, own[i], own[i + 1]);
    if (length !== -1) {
      out.set(CONTENT_LENGTH, at);
      at = writeDigits(out, at + CONTENT_LENGTH.length, length);
      out[at++] = 13;
      out[at++] = 10;
    }
    out.set(end, at);
    at += end.length;
    if (!whole) return { bytes: out.subarray(0, at), body: bodySize === 0 ? null : body };
    if (bodySize === 0) return { bytes: out.subarray(from, at), body: null };
    out.set(body!, at);
    return { bytes: out.subarray(from, at + bodySize), body: null };
  }

  /** Writes an answer's bytes (from encode) to `socket`; a copy when the socket still holds unsent
   * bytes. */
  write(socket: net.Socket, bytes: Buffer): void {
    if (socket.writableLength !== 0) return void socket.write(Buffer.from(bytes));
    socket.write(bytes);
    if (socket.writableLength !== 0) this.pinned = true;
  }

  /** Every answer encoded so far has been written: the buffer is used again from its start, unless a
   * socket holds some of it. */
  rewind(): void {
    if (!this.pinned) this.used = 0;
  }

  private start(status: number, shared: readonly string[]): { status: number; bytes: Buffer; hasLength: boolean } {
    const known = this.starts.get(shared);
    if (known !== undefined && known.status === status) return known;
    const line = statusLine(status);
    let size = line.length;
    for (let i = 0; i < shared.length; i += 2) size += shared[i].length + shared[i + 1].length + 4;
    const bytes = Buffer.alloc(size);
    let at = bytes.write(line, 0, 'latin1');
    for (let i = 0; i < shared.length; i += 2) at = writeField(bytes, at, shared[i], shared[i + 1]);
    const start = { status, bytes, hasLength: indexOfField(shared, 'content-length') !== -1 };
    if (shared.length > 0) this.starts.set(shared, start);
    return start;
  }

  private end(keepAlive: boolean): Buffer {
    const now = Date.now();
    const second = Math.floor(now / 1000);
    if (this.ends === null || second !== this.second) {
      const date = `Date: ${new Date(second * 1000).toUTCString()}\r\n`;
      const keep = `Connection: keep-alive\r\nKeep-Alive: timeout=${Math.floor(this.limits.keepAliveTimeoutMs / 1000)}\r\n\r\n`;
      this.ends = [Buffer.from(`${date}Connection: close\r\n\r\n`, 'latin1'), Buffer.from(date + keep, 'latin1')];
      this.second = second;
    }
    return this.ends[keepAlive ? 1 : 0];
  }
}

const CONTENT_LENGTH = Buffer.from('Content-Length: ', 'latin1');

/** Writes the field line `name: value` CRLF at `at` (one byte per character; the buffer has room) and
 * returns where it ends. Throws on a value Node's http server also refuses to write: any character
 * but tab, visible ASCII, space and obs-text (0x80–0xff); a line break would split the answer. The
 * names are the handler's own (lower-case tokens). */
function writeField(out: Buffer, at: number, name: string, value: string): number {
  for (let i = 0; i < name.length; i++) out[at++] = name.charCodeAt(i);
  out[at++] = 58; // ':'
  out[at++] = 32;
  for (let i = 0; i < value.length; i++) {
    const ch = value.charCodeAt(i);
    if ((ch < 32 && ch !== 9) || ch === 127 || ch > 255) throw new Error(`header ${name} holds a character that cannot be sent (U+${ch.toString(16).padStart(4, '0')})`);
    out[at++] = ch;
  }
  out[at++] = 13;
  out[at++] = 10;
  return at;
}

/** Writes a non-negative integer's decimal digits at `at`; returns where they end. */
function writeDigits(out: Buffer, at: number, n: number): number {
  let end = at + 1;
  for (let rest = n; rest >= 10; rest = Math.floor(rest / 10)) end++;
  for (let i = end - 1; i >= at; i--, n = Math.floor(n / 10)) out[i] = 48 + (n % 10);
  return end;
}

export function createNetServer(handler: Handler, opts: NodeServerOptions = {}): EdgeNetServer {
  return new EdgeNetServer(handler, opts);
}
