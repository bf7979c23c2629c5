// HTTP facts of the contract that the edge, the OpenAPI document and the CDN (infra/) share: the query
// parameters any route reads (the only ones in a cache key) and the CORS headers of every answer.
import { RELEASE_HEADER, routes } from './routes.js';

/** Every query parameter some v1 route reads, sorted: a CDN must key its cache on these and no other. */
export const QUERY_PARAMETERS: readonly string[] = [
  ...new Set(routes.flatMap((r) => [...r.integerParams, ...r.stringParams].map((p) => p.name))),
].sort();

/** The header of an unexpected failure's answer (500) naming the id its log line carries, as the
 * problem's `request_id` does. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/** Response headers a script in a browser may read (WWW-Authenticate: why a key was refused). */
export const EXPOSED_HEADERS = [
  'ETag',
  'Link',
  'Location',
  'Retry-After',
  'WWW-Authenticate',
  RELEASE_HEADER,
  'RateLimit-Limit',
  'RateLimit-Remaining',
  'RateLimit-Reset',
  'RateLimit-Policy',
] as const;

export const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': EXPOSED_HEADERS.join(', '),
};

/** The methods the API answers (read-only; OPTIONS for preflights). */
export const ALLOWED_METHODS = ['GET', 'HEAD', 'OPTIONS'] as const;
export const ALLOW = ALLOWED_METHODS.join(', ');
/** Request headers a script in a browser may send: the key, a validator, a body type. */
export const ALLOWED_REQUEST_HEADERS = ['Authorization', 'If-None-Match', 'Content-Type'] as const;
/** How long a browser may reuse a preflight's answer. */
export const PREFLIGHT_MAX_AGE_SECONDS = 86400;

/** The answer to a preflight (and any OPTIONS), whoever gives it: the edge handler, the CDN's gate and
 * the CDN's response headers policy all take their values from here. */
export const PREFLIGHT_HEADERS: Record<string, string> = {
  ...CORS_HEADERS,
  'Access-Control-Allow-Methods': ALLOW,
  'Access-Control-Allow-Headers': ALLOWED_REQUEST_HEADERS.join(', '),
  'Access-Control-Max-Age': String(PREFLIGHT_MAX_AGE_SECONDS),
  Allow: ALLOW,
};

/** What the CDN tells viewers to do with any answer that may depend on a key or on the release the gate
 * pinned: store it for this user only and revalidate (ETag) before each reuse. CloudFront itself still
 * caches by the origin's Cache-Control; a refusal or error (no-store, or 60 s for a 404) becomes no
 * more reusable by a browser than it was. */
export const CDN_VIEWER_CACHE_CONTROL = 'private, no-cache';
