// Pinned answers: which release a request names, and how an answer to a request that named one keeps
// the client on it. Bodies on disk are the same bytes in every release (no release inside), so the
// links of a pinned answer are rewritten as it is answered: every Link of its body (found from the
// contract's schemas, never by the look of a string) and its Link and Location headers get the
// release. Only a release the client named is carried: DEFAULT_RELEASE_PARAM (the CDN gate's) is not.
import { DEFAULT_RELEASE_PARAM, RELEASE_PARAM } from './contract/routes.js';
import { schemas, type SchemaName } from './contract/schemas.js';
import { pinLink } from './contract/tree.js';
import { RequestProblem } from './router.js';
import { bodyResponse, jsonBody } from './responses.js';

/** The release a request asks for (undefined: the current one), and whether its links carry it. */
export interface AskedRelease {
  name?: string;
  carried: boolean;
}

export function askedRelease(get: (name: string) => string | null | undefined): AskedRelease {
  const named = get(RELEASE_PARAM) ?? undefined;
  const fallback = get(DEFAULT_RELEASE_PARAM) ?? undefined;
  if (named !== undefined && fallback !== undefined) {
    throw new RequestProblem(
      400,
      `give "${RELEASE_PARAM}" (a release links carry) or "${DEFAULT_RELEASE_PARAM}" (one they do not), not both`,
      DEFAULT_RELEASE_PARAM,
    );
  }
  return named !== undefined ? { name: named, carried: true } : { name: fallback, carried: false };
}

type Schema = Record<string, unknown>;
const LINK = 'Link';

/** Does a value of this schema hold a Link anywhere? Memoized: schemas are few and fixed. */
const linked = new Map<Schema, boolean>();
function holdsLink(schema: Schema): boolean {
  let known = linked.get(schema);
  if (known === undefined) {
    linked.set(schema, false); // a schema referring to itself holds no link through that reference
    known = children(schema).some(holdsLink) || schema.$ref === LINK;
    linked.set(schema, known);
  }
  return known;
}

function children(schema: Schema): Schema[] {
  const out: Schema[] = [];
  if (typeof schema.$ref === 'string' && schema.$ref !== LINK)
    out.push(schemas[schema.$ref as SchemaName] as unknown as Schema);
  for (const key of ['properties', 'patternProperties'] as const)
    if (schema[key]) out.push(...Object.values(schema[key] as Record<string, Schema>));
  if (schema.items) out.push(schema.items as Schema);
  if (Array.isArray(schema.anyOf)) out.push(...(schema.anyOf as Schema[]));
  return out;
}

/** Does an answer of this schema have links to carry a release? */
export const hasLinks = (name: SchemaName | null): boolean =>
  name !== null && holdsLink(schemas[name] as unknown as Schema);

/** The value with every Link its schema declares pinned to `release` (changed in place). */
function pinValue(schema: Schema, value: unknown, release: string): unknown {
  if (!holdsLink(schema) || value === null || value === undefined) return value;
  if (schema.$ref === LINK) return typeof value === 'string' ? pinLink(value, release) : value;
  if (typeof schema.$ref === 'string')
    return pinValue(schemas[schema.$ref as SchemaName] as unknown as Schema, value, release);
  // A union holding a link is a nullable link or object (null was returned above): its linked branch.
  if (Array.isArray(schema.anyOf)) return pinValue((schema.anyOf as Schema[]).find(holdsLink)!, value, release);
  if (Array.isArray(value))
    return schema.items ? value.map((item) => pinValue(schema.items as Schema, item, release)) : value;
  if (typeof value !== 'object') return value;
  const record = value as Record<string, unknown>;
  const properties = (schema.properties ?? {}) as Record<string, Schema>;
  const each = Object.values((schema.patternProperties ?? {}) as Record<string, Schema>)[0];
  for (const key of Object.keys(record)) {
    const inner = properties[key] ?? each;
    if (inner) record[key] = pinValue(inner, record[key], release);
  }
  return record;
}

export function pinBody(name: SchemaName, body: unknown, release: string): unknown {
  return pinValue(schemas[name] as unknown as Schema, body, release);
}

/** The Link and Location headers of an answer pinned to `release`. */
export function pinHeaders(headers: Headers, release: string): void {
  const link = headers.get('link');
  if (link !== null)
    headers.set(
      'link',
      link.replace(/<([^>]*)>/g, (_, target: string) => `<${pinLink(target, release)}>`),
    );
  const location = headers.get('location');
  if (location !== null) headers.set('location', pinLink(location, release));
}

/** The answer to a request that named `release`, from the route's answer for it. A body with links is
 * asked for as a plain GET (the route's 304 and HEAD would be about the unpinned body), rewritten,
 * and answered with the strong ETag of the bytes sent, so a pinned and an unpinned copy never share a
 * tag, and If-None-Match is compared with the pinned copy's. */
export async function pinnedAnswer(
  request: Request,
  schema: SchemaName | null,
  release: string,
  answer: (request: Request) => Promise<Response>,
): Promise<Response> {
  if (!hasLinks(schema)) {
    const response = await answer(request);
    pinHeaders(response.headers, release);
    return response;
  }
  const headers = new Headers(request.headers);
  headers.delete('if-none-match');
  const response = await answer(new Request(request.url, { method: 'GET', headers }));
  pinHeaders(response.headers, release);
  if (response.status !== 200) return request.method === 'HEAD' ? new Response(null, response) : response;
  const body = pinBody(schema!, await response.json(), release);
  const kept = Object.fromEntries([...response.headers].filter(([name]) => !REPLACED.has(name)));
  return bodyResponse(request, jsonBody(body), {
    cacheControl: response.headers.get('cache-control') ?? 'no-store',
    headers: kept,
  });
}

/** Headers bodyResponse writes for the pinned body itself. */
const REPLACED = new Set(['etag', 'content-length', 'content-type', 'cache-control']);
