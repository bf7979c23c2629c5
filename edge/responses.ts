// Building responses: JSON with ETag and conditional GET, RFC 9457 problem details, CORS.
// Web-standard only (Response, Headers, crypto.subtle), so the same code runs in Node and at the edge.
import { redactKeys } from './access/redaction.js';
import { ALLOW, CORS_HEADERS, PREFLIGHT_HEADERS } from './contract/http-headers.js';
import { DEFAULT_RELEASE_PARAM } from './contract/routes.js';
import { requestUrl } from './request-url.js';

export { ALLOW, CORS_HEADERS, PREFLIGHT_HEADERS };
export const JSON_TYPE = 'application/json; charset=utf-8';
export const PROBLEM_TYPE = 'application/problem+json; charset=utf-8';

/** Reason phrases of the statuses the API answers with, for problem titles and raw answers. */
export const REASONS: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  404: 'Not Found',
  405: 'Method Not Allowed',
  409: 'Conflict',
  408: 'Request Timeout',
  413: 'Content Too Large',
  414: 'URI Too Long',
  416: 'Range Not Satisfiable',
  429: 'Too Many Requests',
  431: 'Request Header Fields Too Large',
  500: 'Internal Server Error',
  502: 'Bad Gateway',
  503: 'Service Unavailable',
  504: 'Gateway Timeout',
  505: 'HTTP Version Not Supported',
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
  cacheControl: string;
  headers?: Record<string, string>;
  /** The body's sha256 when already known (a file verified against the manifest). */
  sha256?: string;
  /** Content-Type of the body (default JSON). */
  contentType?: string;
}

/** A 200 with a body (JSON unless said otherwise), its sha256 as strong ETag, and 304 on a match.
 * For a file of the tree the sha256 is the manifest's, so the ETag names the file's exact bytes. */
export async function bodyResponse(request: Request, bytes: Uint8Array, opts: BodyOptions): Promise<Response> {
  const etag = `"${opts.sha256 ?? (await sha256Hex(bytes))}"`;
  const headers = new Headers({ ...CORS_HEADERS, ...opts.headers, ETag: etag, 'Cache-Control': opts.cacheControl });
  if (etagMatches(request.headers.get('if-none-match'), etag)) return new Response(null, { status: 304, headers });
  headers.set('Content-Type', opts.contentType ?? JSON_TYPE);
  headers.set('Content-Length', String(bytes.length));
  return new Response(request.method === 'HEAD' ? null : (bytes as Uint8Array<ArrayBuffer>), { status: 200, headers });
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

/** The RFC 9457 body of a problem. `type` is about:blank (the status says what kind of problem it
 * is) and `title` the status phrase; `detail` says what exactly went wrong and how to fix it. */
export function problemBody(instance: string, init: ProblemInit): Uint8Array {
  return jsonBody({
    type: 'about:blank',
    title: REASONS[init.status] ?? 'Error',
    status: init.status,
    // A key pasted into a URL by mistake is never echoed back, in any member of the problem: a
    // member that quotes part of the request is read against the whole of it (the instance).
    detail: redactKeys(init.detail, instance),
    instance: redactKeys(instance),
    ...Object.fromEntries(
      Object.entries(init.extra ?? {}).map(([name, value]) => [
        name,
        typeof value === 'string' ? redactKeys(value, instance) : value,
      ]),
    ),
  });
}

/** The query as the viewer wrote it: less DEFAULT_RELEASE_PARAM, which the CDN's gate adds, so a
 * problem's instance is the same through the CDN as from a server. */
function viewerQuery(search: string): string {
  const kept = search
    .slice(1)
    .split('&')
    .filter((part) => part !== '' && part.split('=')[0] !== DEFAULT_RELEASE_PARAM);
  return kept.length ? `?${kept.join('&')}` : '';
}

/** A problem answer. 404s may be cached briefly (a name absent from a release stays absent);
 * everything else is about this request only. */
export function problem(request: Request, init: ProblemInit): Response {
  const url = requestUrl(request);
  const bytes = problemBody(url.pathname + viewerQuery(url.search), init);
  const headers = new Headers({
    ...CORS_HEADERS,
    'Cache-Control': init.status === 404 ? 'public, max-age=60' : 'no-store',
    ...init.headers,
    'Content-Type': PROBLEM_TYPE,
    'Content-Length': String(bytes.length),
  });
  return new Response(request.method === 'HEAD' ? null : (bytes as Uint8Array<ArrayBuffer>), {
    status: init.status,
    headers,
  });
}
