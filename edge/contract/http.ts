// HTTP facts of the contract that the edge, the OpenAPI document and the CDN (infra/) share: the query
// parameters any route reads (the only ones in a cache key) and the CORS headers of every answer.
import { RELEASE_HEADER, routes } from './routes.js';

/** Every query parameter some v1 route reads, sorted: a CDN must key its cache on these and no other. */
export const QUERY_PARAMETERS: readonly string[] = [...new Set(routes.flatMap((r) => [...r.integerParams, ...r.stringParams].map((p) => p.name)))].sort();

/** The header of an unexpected failure's answer (500) naming the id its log line carries, as the
 * problem's `request_id` does. */
export const REQUEST_ID_HEADER = 'X-Request-Id';

/** Response headers a script in a browser may read. */
export const EXPOSED_HEADERS = ['ETag', 'Link', 'Location', 'Retry-After', RELEASE_HEADER, 'RateLimit-Limit', 'RateLimit-Remaining', 'RateLimit-Reset', 'RateLimit-Policy'] as const;

export const CORS_HEADERS: Record<string, string> = {
  'Access-Control-Allow-Origin': '*',
  'Access-Control-Expose-Headers': EXPOSED_HEADERS.join(', '),
};
