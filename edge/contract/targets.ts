// The request targets refused before anything reads them as a URL: those a URL parser would turn
// into another path (a backslash becomes `/`, `..` climbs, `%2F` may be decoded into a separator)
// or that no path segment of the route table could be. Stated here once, as regular expressions
// over the raw target; the server's adapters test them (edge/adapters/) and the nginx front's config
// is generated from the same sources (edge/server/nginx-config.ts), so both refuse the same targets, with
// the same detail, before either routes them.
import { PATH_SEGMENT_MAX } from './routes.js';

/** Why a refused target is refused: the one detail of the 400 from the server and from the front. */
export const REFUSED_TARGET_DETAIL = `the request target must be an absolute path such as /api/v1/, without a backslash, a fragment, an encoded slash, backslash or NUL, a dot segment (. or ..), invalid percent-encoding, or a path segment over ${PATH_SEGMENT_MAX} characters`;

const HEX = '[0-9A-Fa-f]';
/** The path: what precedes the query (a target holds no white space; in nginx's `$request` a space
 * ends it). */
const PATH = '[^?\\s]*';
/** One character of a segment as the router counts it once decoded: a percent-encoded byte that is
 * not a UTF-8 continuation, with the continuations after it, or one raw byte. (Small: nginx's PCRE
 * copies it for each repetition counted.) */
const CHAR = `(?:%[0-7C-Fc-f]${HEX}(?:%[89ABab]${HEX})*|[^/?%\\s])`;

/** Each refusal, as a pattern that follows the target's start. Syntax both JavaScript and nginx's
 * PCRE read alike. */
const REFUSED: readonly string[] = [
  // Not origin-form (`*`, `http://host/…`): only a path names a resource here.
  '(?!/)',
  `${PATH}\\\\`,
  `${PATH}%(?:2[Ff]|5[Cc]|00)`,
  `${PATH}%(?!${HEX}{2})`,
  // Clients never send one; a URL parser drops it and what follows.
  '[^\\s]*#',
  `${PATH}/(?:\\.|%2[Ee]){1,2}(?:[/?\\s]|$)`,
  `${PATH}/${CHAR}{${PATH_SEGMENT_MAX + 1}}`,
];

const REFUSED_TARGET = REFUSED.map((p) => new RegExp(`^${p}`));

/** Is this raw request target (as sent: Node's `req.url`, a CloudFront URI and query) refused? */
export function refusedTarget(target: string): boolean {
  return REFUSED_TARGET.some((re) => re.test(target));
}

/** The same patterns over nginx's `$request` (`METHOD target HTTP/x.y`), for a `map`. */
export const NGINX_REFUSED_REQUEST: readonly string[] = REFUSED.map((p) => `^\\S+ ${p}`);
