// The OpenAPI 3.1 document of v1, generated from the route table and the schemas (never hand-written):
// every route with every status it can answer, the headers that come with each, the bearer scheme of
// both access arrangements, and examples from the release it describes.
import { API_PREFIX } from './tree.js';
import {
  PATH_SEGMENT_PATTERN,
  RELEASE_HEADER,
  RELEASE_PARAM,
  isKeyedFile,
  routes,
  type Route,
  type RouteId,
} from './routes.js';
import { schemas } from './schemas.js';
import { CDN_VIEWER_CACHE_CONTROL } from './http-headers.js';

/** Examples from the release the document is rendered with. */
export interface OpenApiExamples {
  /** A value of each path parameter that names something in the release. */
  pathParams: Record<string, string>;
  /** A 200 body of each route, where the release has one to show. */
  bodies: Partial<Record<RouteId, unknown>>;
}

const ref = (kind: 'schemas' | 'headers' | 'responses', name: string) => ({ $ref: `#/components/${kind}/${name}` });

/** Response headers, declared once and referred to by each response that carries them. */
const HEADERS = {
  ETag: {
    description:
      'Entity tag of the representation sent: "<sha256 of the body>" (strong) for identity; W/"<sha256>-br" or W/"<sha256>-gzip" for a compressed body (isoatlas serve and its nginx front). Send it back in If-None-Match for a 304.',
    schema: { type: 'string' },
  },
  'Cache-Control': {
    description: `Release files: public for an hour, stale-while-revalidate for a day; search: a minute; errors: no-store (404: a minute). With keys required, every answer is private and varies by Authorization. Through the CDN, API answers (and in arrangement B every answer) reach viewers as \`${CDN_VIEWER_CACHE_CONTROL}\`: revalidate with If-None-Match.`,
    schema: { type: 'string' },
  },
  Vary: {
    description:
      'Authorization, on answers to keyed requests when keys are required; Accept-Encoding, on JSON and mmCIF answers of isoatlas serve and its nginx front.',
    schema: { type: 'string' },
  },
  Link: {
    description: `RFC 8288 link to the next page: \`<url>; rel="next"\`, while there are more items. In an answer to a request that named \`${RELEASE_PARAM}\`, the url carries it, as every link of the body does.`,
    schema: { type: 'string' },
  },
  Location: {
    description: 'Where the mmCIF file is: the configured structure base plus the file path, or a root-relative path.',
    schema: { type: 'string' },
  },
  'RateLimit-Limit': {
    description: 'Requests allowed in the window closest to exhaustion (sent when access control is on).',
    schema: { type: 'integer', minimum: 0 },
  },
  'RateLimit-Remaining': { description: 'Requests left in that window.', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Reset': { description: 'Seconds until that window resets.', schema: { type: 'integer', minimum: 0 } },
  'RateLimit-Policy': {
    description: 'Every window that applies, as `<limit>;w=<seconds>`, comma-separated.',
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before trying again.', schema: { type: 'integer', minimum: 0 } },
  'WWW-Authenticate': {
    description: 'The Bearer challenge; `error="invalid_token"` when a key was sent and refused.',
    schema: { type: 'string' },
  },
  Allow: { description: 'The methods the API answers: GET, HEAD, OPTIONS.', schema: { type: 'string' } },
  [RELEASE_HEADER]: {
    description: 'The release this answer is from: the one asked for with `release`, or the current one.',
    schema: { type: 'string' },
  },
} as const;

const RATE_LIMIT = {
  'RateLimit-Limit': ref('headers', 'RateLimit-Limit'),
  'RateLimit-Remaining': ref('headers', 'RateLimit-Remaining'),
  'RateLimit-Reset': ref('headers', 'RateLimit-Reset'),
  'RateLimit-Policy': ref('headers', 'RateLimit-Policy'),
};

/** The error answers every route can give, by status: what they mean and the headers they carry. */
const ERRORS: Record<
  number,
  { name: string; description: string; headers?: Record<string, unknown>; content?: Record<string, unknown> }
> = {
  400: {
    name: 'BadRequest',
    description:
      "A malformed, out-of-range, repeated or unknown parameter (the `parameter` member names a query parameter at fault). From the CDN's WAF, headers it cannot inspect whole (more than 200 fields or 8,192 bytes of them), as `application/json` (a WafRefusal); the local server answers such a request 431.",
    content: { 'application/json': { schema: ref('schemas', 'WafRefusal') } },
  },
  401: {
    name: 'Unauthorized',
    description:
      'Keys required (arrangement B) and none sent, or a key sent that is malformed, unknown or revoked (either arrangement: an invalid key is never served as anonymous).',
    headers: { 'WWW-Authenticate': ref('headers', 'WWW-Authenticate') },
  },
  404: {
    name: 'NotFound',
    description:
      'No such gene, isoform, structure or endpoint in this release. For a gene or isoform that an older kept release holds, the problem names it (`last_release`, `last_release_link`); for an Ensembl id asked with another version than the release has, the current one (`current_id`, `current_link`).',
  },
  405: {
    name: 'MethodNotAllowed',
    description: 'Only GET, HEAD and OPTIONS are answered: the API is read-only.',
    headers: { Allow: ref('headers', 'Allow') },
  },
  429: {
    name: 'TooManyRequests',
    description:
      "A rate limit is used up: per key, or per client IP address (anonymous use, or the coarse per-IP limit). From the CDN's WAF (per-minute limits, before any key is checked) the body is `application/json` (a WafRefusal: WAF sends no problem+json) and carries no RateLimit-* headers; Retry-After is readable by scripts in both.",
    headers: { 'Retry-After': ref('headers', 'Retry-After'), ...RATE_LIMIT },
    content: { 'application/json': { schema: ref('schemas', 'WafRefusal') } },
  },
  502: {
    name: 'BadGateway',
    description: 'The atlas storage answered wrongly, or a file failed its integrity check; try again shortly.',
    headers: { 'Retry-After': ref('headers', 'Retry-After') },
  },
  503: {
    name: 'ServiceUnavailable',
    description: 'The atlas storage is busy, or keys cannot be checked right now; try again shortly.',
    headers: { 'Retry-After': ref('headers', 'Retry-After') },
  },
  504: {
    name: 'GatewayTimeout',
    description: 'The atlas storage did not answer in time; try again shortly.',
    headers: { 'Retry-After': ref('headers', 'Retry-After') },
  },
};

const SECURITY_DESCRIPTION = [
  'API keys look like `isoatlas_<id>_<secret>` and are sent as `Authorization: Bearer <key>`: the scheme in any letter case, one space, the key, nothing after it (other spellings are answered 401).',
  "Arrangement A (open): no key is needed; anonymous clients are limited per IP address, and a key gives its tier's higher quota. A key that is sent must be valid: an invalid one is answered 401, never served as anonymous.",
  'Arrangement B (key required): every request needs a key (401 without one); each key has a per-minute and a per-day quota (default 60/min and 5,000/day), and a coarse per-IP limit applies before any key is checked.',
  'Over a limit the answer is 429 with Retry-After; RateLimit-* headers report the window closest to exhaustion.',
].join(' ');

/** TypeBox refs name schemas by $id; OpenAPI wants `#/components/schemas/<name>`. */
function toComponentRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponentRefs);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$id') continue;
      out[key] =
        key === '$ref' && typeof inner === 'string' && !inner.startsWith('#')
          ? `#/components/schemas/${inner}`
          : toComponentRefs(inner);
    }
    return out;
  }
  return value;
}

function parameters(route: Route, examples: OpenApiExamples | undefined) {
  return [
    ...route.pathParams.map((p) => ({
      name: p.name,
      in: 'path',
      required: true,
      description: p.description,
      schema: { type: 'string', pattern: PATH_SEGMENT_PATTERN, maxLength: 200 },
      example: examples?.pathParams[p.name] ?? p.example,
    })),
    ...route.integerParams.map((p) => ({
      name: p.name,
      in: 'query',
      required: false,
      description: p.description,
      schema: { type: 'integer', minimum: p.minimum, maximum: p.maximum, default: p.default },
    })),
    ...route.stringParams.map((p) => ({
      name: p.name,
      in: 'query',
      required: p.required,
      description: p.description,
      schema: { type: 'string', minLength: p.minLength, maxLength: p.maxLength },
    })),
  ];
}

function successes(route: Route, examples: OpenApiExamples | undefined): Record<string, unknown> {
  const cache = {
    'Cache-Control': ref('headers', 'Cache-Control'),
    Vary: ref('headers', 'Vary'),
    [RELEASE_HEADER]: ref('headers', RELEASE_HEADER),
  };
  if (route.status === 307) {
    return {
      '307': {
        description: 'Temporary redirect to the mmCIF file (chemical/x-mmcif) of the predicted structure.',
        headers: { Location: { ...HEADERS.Location, required: true }, ...cache, ...RATE_LIMIT },
      },
    };
  }
  const example = examples?.bodies[route.id as RouteId];
  return {
    '200': {
      description: 'OK',
      headers: {
        ETag: ref('headers', 'ETag'),
        ...cache,
        // A list taking `offset` is paged: its Link header names the next page.
        ...(route.integerParams.some((p) => p.name === 'offset') ? { Link: ref('headers', 'Link') } : {}),
        ...RATE_LIMIT,
      },
      content: route.mediaType
        ? { [route.mediaType]: { schema: { type: 'string' } } }
        : {
            'application/json': {
              schema: route.schema
                ? ref('schemas', route.schema)
                : { type: 'object', description: 'This OpenAPI document' },
              ...(example === undefined ? {} : { example }),
            },
          },
    },
    '304': {
      description: 'Not Modified: If-None-Match matched the ETag.',
      headers: { ETag: ref('headers', 'ETag'), ...cache, ...RATE_LIMIT },
    },
  };
}

function operation(route: Route, examples: OpenApiExamples | undefined) {
  const responses: Record<string, unknown> = successes(route, examples);
  // A route keyed by a gene resolves a symbol, which several genes may share.
  if (isKeyedFile(route) && route.file.per === 'gene') {
    responses['409'] = {
      description: 'The symbol names several genes: ask again with one of the gene ids listed in `choices`.',
      headers: { 'Cache-Control': ref('headers', 'Cache-Control'), ...RATE_LIMIT },
      content: { 'application/problem+json': { schema: ref('schemas', 'MultipleChoices') } },
    };
  }
  for (const [status, error] of Object.entries(ERRORS)) responses[status] = ref('responses', error.name);
  return {
    operationId: route.id,
    tags: [route.tag],
    summary: route.summary,
    description: route.description || undefined,
    parameters: parameters(route, examples),
    responses,
  };
}

export function buildOpenApi(release: { release: string; title: string }, examples?: OpenApiExamples) {
  const paths: Record<string, unknown> = {};
  for (const route of routes) paths[route.path] = { get: operation(route, examples) };
  const responses = Object.fromEntries(
    Object.values(ERRORS).map((e) => [
      e.name,
      {
        description: e.description,
        headers: { 'Cache-Control': ref('headers', 'Cache-Control'), ...e.headers },
        content: { 'application/problem+json': { schema: ref('schemas', 'Problem') }, ...e.content },
      },
    ]),
  );
  return {
    // No jsonSchemaDialect: the default (the OAS 3.1 base dialect, JSON Schema 2020-12 with OpenAPI's
    // vocabulary) reads these schemas as they are, and Swagger UI warns in red on any other value.
    openapi: '3.1.0',
    info: {
      title: 'isoatlas API',
      version: `v1 (release ${release.release})`,
      summary: release.title,
      description:
        'Read-only JSON API over curated genes, isoforms, per-isoform summary metrics, Pfam and TED domains, predicted neoantigens and predicted structures. GET and HEAD only (OPTIONS for CORS preflights). Errors are RFC 9457 problem+json. Every 200 carries an ETag; If-None-Match gives 304. Bodies are sent br or gzip when Accept-Encoding asks for it.',
      license: { name: 'CC-BY-4.0', identifier: 'CC-BY-4.0' },
    },
    servers: [{ url: API_PREFIX }],
    // The key is optional in arrangement A and required in B: both are described by the scheme.
    security: [{}, { bearerKey: [] }],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([name, s]) => [name, toComponentRefs(s)])),
      headers: HEADERS,
      responses,
      securitySchemes: {
        bearerKey: {
          type: 'http',
          scheme: 'bearer',
          bearerFormat: 'isoatlas_<id>_<secret>',
          description: SECURITY_DESCRIPTION,
        },
      },
    },
  };
}
