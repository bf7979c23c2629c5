// The OpenAPI 3.1 document of v1, generated from the route table and the schemas (never hand-written).
import { API_PREFIX } from './tree.js';
import { routes, type Route } from './routes.js';
import { schemas } from './schemas.js';

const problemResponse = (description: string) => ({
  description,
  content: { 'application/problem+json': { schema: { $ref: '#/components/schemas/Problem' } } },
});

/** TypeBox refs name schemas by $id; OpenAPI wants `#/components/schemas/<name>`. */
function toComponentRefs(value: unknown): unknown {
  if (Array.isArray(value)) return value.map(toComponentRefs);
  if (value && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [key, inner] of Object.entries(value)) {
      if (key === '$id') continue;
      out[key] = key === '$ref' && typeof inner === 'string' && !inner.startsWith('#') ? `#/components/schemas/${inner}` : toComponentRefs(inner);
    }
    return out;
  }
  return value;
}

function operation(route: Route) {
  const parameters = [
    ...route.pathParams.map((p) => ({
      name: p.name,
      in: 'path',
      required: true,
      description: p.description,
      schema: { type: 'string' },
      example: p.example,
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
  const ok =
    route.status === 307
      ? {
          '307': {
            description: 'Redirect to the mmCIF file (chemical/x-mmcif)',
            headers: { Location: { schema: { type: 'string', format: 'uri' } } },
          },
        }
      : {
          '200': {
            description: 'OK',
            headers: { ETag: { schema: { type: 'string' } } },
            content: {
              'application/json': {
                schema: route.schema ? { $ref: `#/components/schemas/${route.schema}` } : { type: 'object' },
              },
            },
          },
          '304': { description: 'Not Modified (If-None-Match matched the ETag)' },
        };
  const errors: Record<string, unknown> = {
    '400': problemResponse('A malformed, out-of-range or unknown parameter'),
    '404': problemResponse('No such resource'),
    '405': problemResponse('Only GET, HEAD and OPTIONS are allowed'),
  };
  if (route.id === 'gene' || route.id === 'geneIsoforms') {
    errors['300'] = problemResponse('The symbol names several genes; the body lists their gene ids');
  }
  return {
    operationId: route.id,
    tags: [route.tag],
    summary: route.summary,
    description: route.description || undefined,
    parameters,
    responses: { ...ok, ...errors },
  };
}

export function buildOpenApi(release: { release: string; title: string }) {
  const paths: Record<string, unknown> = {};
  for (const route of routes) paths[route.path] = { get: operation(route) };
  return {
    openapi: '3.1.0',
    jsonSchemaDialect: 'https://json-schema.org/draft/2020-12/schema',
    info: {
      title: 'isoatlas API',
      version: `v1 (release ${release.release})`,
      summary: release.title,
      description:
        'Read-only JSON API over curated genes, isoforms, per-isoform summary metrics, Pfam and TED domains, predicted neoantigens and predicted structures. Only GET and HEAD. Errors are RFC 9457 problem+json.',
      license: { name: 'CC-BY-4.0', identifier: 'CC-BY-4.0' },
    },
    servers: [{ url: API_PREFIX }],
    paths,
    components: {
      schemas: Object.fromEntries(Object.entries(schemas).map(([name, s]) => [name, toComponentRefs(s)])),
    },
  };
}
