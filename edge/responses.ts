// Building responses: JSON with ETag and conditional GET, RFC 9457 problem details, CORS.
// Web-standard only (Response, crypto.subtle), so the same code runs in Node and at the edge. The
// edge builds an EdgeResponse (status, headers, the body bytes it already holds): the Node adapter
// writes it as it is, and toWebResponse makes the Web Response every other caller gets.
import { redactKeys } from './access/key-format.js';
import type { EdgeRequest } from './request.js';

/** A response as the edge builds it. Its header fields are a flat [name, value, …] list with
 * lower-case names (as a Web Headers object gives them out), each name once: what Node's writeHead
 * takes as it is. `body` is null for HEAD, 204, 304 and redirects.
 *
 * The fields come in two parts: `sharedFields`, a list other responses hold too (a file's answer is
 * the same on every request for it, so its fields are made once) and never changed, then
 * `ownFields`, this response's own (the rate-limit headers of its request). A front end can write the
 * shared part out once per list and reuse it. */
export class EdgeResponse {
  private shared: readonly string[];
  private own: string[];

  constructor(
    readonly status: number,
    fields: string[],
    readonly body: Uint8Array | null,
  ) {
    this.shared = NO_FIELDS;
    this.own = fields;
  }

  static of(status: number, headers: Record<string, string>, body: Uint8Array | null): EdgeResponse {
    const fields: string[] = [];
    for (const name in headers) fields.push(name.toLowerCase(), headers[name]);
    return new EdgeResponse(status, fields, body);
  }

  /** A response whose fields start with `shared`, which it never changes (set() copies first). */
  static sharing(status: number, shared: readonly string[], body: Uint8Array | null): EdgeResponse {
    const response = new EdgeResponse(status, [], body);
    response.shared = shared;
    return response;
  }

  get sharedFields(): readonly string[] {
    return this.shared;
  }

  get ownFields(): readonly string[] {
    return this.own;
  }

  /** Every field, shared then own, as one new list. */
  get fields(): string[] {
    return this.shared.length === 0 ? this.own.slice() : [...this.shared, ...this.own];
  }

  get(name: string): string | null {
    const i = indexOfField(this.own, name);
    if (i !== -1) return this.own[i + 1];
    const j = indexOfField(this.shared, name);
    return j === -1 ? null : this.shared[j + 1];
  }

  /** Sets a header (`name` in lower case), replacing its value if present. */
  set(name: string, value: string): void {
    const i = indexOfField(this.own, name);
    if (i !== -1) {
      this.own[i + 1] = value;
      return;
    }
    if (indexOfField(this.shared, name) !== -1) {
      // Replacing a shared field: this response takes its own copy of the list.
      this.own = [...this.shared, ...this.own];
      this.shared = NO_FIELDS;
      return this.set(name, value);
    }
    this.own.push(name, value);
  }

  get headers(): Record<string, string> {
    const out: Record<string, string> = {};
    for (let i = 0; i < this.shared.length; i += 2) out[this.shared[i]] = this.shared[i + 1];
    for (let i = 0; i < this.own.length; i += 2) out[this.own[i]] = this.own[i + 1];
    return out;
  }
}

/** An empty field list, shared. */
export const NO_FIELDS: readonly string[] = Object.freeze([]);

/** Where the field `name` (lower case) is in a [name, value, …] list, or -1. */
export function indexOfField(fields: readonly string[], name: string): number {
  for (let i = 0; i < fields.length; i += 2) if (fields[i] === name) return i;
  return -1;
}

export function toWebResponse(response: EdgeResponse): Response {
  return new Response(response.body as Uint8Array<ArrayBuffer> | null, { status: response.status, headers: response.headers });
}

/** The same headers with lower-case names. */
export function lowerCaseNames(headers: Record<string, string> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  if (headers) for (const name in headers) out[name.toLowerCase()] = headers[name];
  return out;
}

export const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': 'ETag, Link, Location, Retry-After, RateLimit-Limit, RateLimit-Remaining, RateLimit-Reset, RateLimit-Policy',
};

export const PREFLIGHT_HEADERS: Record<string, string> = {
  ...CORS_HEADERS,
  'Access-Control-Allow-Methods': 'GET, HEAD, OPTIONS',
  'Access-Control-Allow-Headers': 'Authorization, If-None-Match, Content-Type',
  'Access-Control-Max-Age': '86400',
};

export const ALLOW = 'GET, HEAD, OPTIONS';
const CORS = lowerCaseNames(CORS_HEADERS);
const JSON_TYPE = 'application/json; charset=utf-8';
const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

const REASONS: Record<number, string> = {
  300: 'Multiple Choices',
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  429: 'Too Many Requests',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
};

const encoder = new TextEncoder();

export async function sha256Hex(bytes: Uint8Array): Promise<string> {
  const digest = new Uint8Array(await crypto.subtle.digest('SHA-256', bytes as Uint8Array<ArrayBuffer>));
  let hex = '';
  for (const b of digest) hex += b.toString(16).padStart(2, '0');
  return hex;
}

/** Does an If-None-Match header match this entity tag? (Weak comparison, as RFC 9110 asks for GET.) */
export function etagMatches(ifNoneMatch: string | null, etag: string): boolean {
  if (ifNoneMatch === null) return false;
  const bare = etag.replace(/^W\//, '');
  return ifNoneMatch.split(',').some((candidate) => {
    const c = candidate.trim();
    return c === '*' || c.replace(/^W\//, '') === bare;
  });
}

export interface BodyOptions {
  request: EdgeRequest;
  cacheControl: string;
  headers?: Record<string, string>;
  /** The body's sha256 when already known (a file verified against the manifest). */
  sha256?: string;
}

/** The header fields of a 200 and of a 304 for one body. */
interface BodyFields {
  etag: string;
  cacheControl: string;
  extra: Record<string, string> | undefined;
  ok: readonly string[];
  notModified: readonly string[];
}

/** Header fields of the file bodies served lately, by body: a file (kept by the origin's cache) gets
 * the same fields on every request, so they are built once. Forgotten with the body. */
const fieldsOfFile = new WeakMap<Uint8Array, BodyFields>();

function sameHeaders(a: Record<string, string> | undefined, b: Record<string, string> | undefined): boolean {
  if (a === b) return true;
  const ka = a ? Object.keys(a) : [];
  const kb = b ? Object.keys(b) : [];
  return ka.length === kb.length && ka.every((k) => a![k] === b?.[k]);
}

function bodyFields(bytes: Uint8Array, etag: string, opts: BodyOptions): BodyFields {
  const notModified = EdgeResponse.of(304, { ...CORS, ...lowerCaseNames(opts.headers), etag, 'cache-control': opts.cacheControl }, null).fields;
  const ok = [...notModified, 'content-type', JSON_TYPE, 'content-length', String(bytes.length)];
  return { etag, cacheControl: opts.cacheControl, extra: opts.headers, ok, notModified };
}

/** A 200 with a JSON body (already serialized), its sha256 as strong ETag, and 304 on a match.
 * For a file-backed route the bytes are the file's, so the ETag equals the manifest's sha256. */
export async function jsonResponse(bytes: Uint8Array, opts: BodyOptions): Promise<EdgeResponse> {
  if (opts.sha256 !== undefined) return fileJsonResponse(bytes, opts.sha256, opts);
  return answer(bytes, bodyFields(bytes, `"${await sha256Hex(bytes)}"`, opts), opts);
}

/** jsonResponse for a body whose sha256 is known (a file of the tree), without a promise to wait for. */
export function fileJsonResponse(bytes: Uint8Array, sha256: string, opts: BodyOptions): EdgeResponse {
  let fields = fieldsOfFile.get(bytes);
  if (!fields || fields.cacheControl !== opts.cacheControl || !sameHeaders(fields.extra, opts.headers)) {
    fields = bodyFields(bytes, `"${sha256}"`, opts);
    fieldsOfFile.set(bytes, fields);
  }
  return answer(bytes, fields, opts);
}

function answer(bytes: Uint8Array, fields: BodyFields, opts: BodyOptions): EdgeResponse {
  const ifNoneMatch = opts.request.headers.get('if-none-match');
  if (ifNoneMatch !== null && etagMatches(ifNoneMatch, fields.etag)) {
    return EdgeResponse.sharing(304, fields.notModified, null);
  }
  return EdgeResponse.sharing(200, fields.ok, opts.request.method === 'HEAD' ? null : bytes);
}

export function jsonBody(value: unknown): Uint8Array {
  return encoder.encode(JSON.stringify(value));
}

export interface ProblemInit {
  status: number;
  detail: string;
  /** Extension members (RFC 9457 §3.2), e.g. the offending parameter. */
  extra?: Record<string, unknown>;
  headers?: Record<string, string>;
}

/** An RFC 9457 problem. `type` is about:blank (the status says what kind of problem it is) and
 * `title` the status phrase; `detail` says what exactly went wrong and how to fix it. */
export function problem(request: EdgeRequest, init: ProblemInit): EdgeResponse {
  const url = new URL(request.url);
  const body = {
    type: 'about:blank',
    title: REASONS[init.status] ?? 'Error',
    status: init.status,
    // A key pasted into a URL by mistake is never echoed back.
    detail: redactKeys(init.detail),
    instance: redactKeys(url.pathname + url.search),
    ...init.extra,
  };
  const bytes = jsonBody(body);
  const cache = init.status === 404 ? 'public, max-age=60' : 'no-store';
  const headers = { ...CORS, 'cache-control': cache, ...lowerCaseNames(init.headers), 'content-type': PROBLEM_TYPE, 'content-length': String(bytes.length) };
  return EdgeResponse.of(init.status, headers, request.method === 'HEAD' ? null : bytes);
}
