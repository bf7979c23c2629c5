// Every resource is declared once, in the route table (edge/contract/routes.ts); what each stage needs
// of it is derived. For every route the table declares, this checks each derivation against the demo
// tree: its link and handler binding (the edge answers the link with the file itself), and for a
// route declared as a file its tree path, its schema lookup, its nginx location, its OpenAPI example
// and its link in the record it belongs to. It iterates over the table: a route added there without
// any of these fails here by name.
import { describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { isKeyedFile, listSize, routes, type Route } from '../edge/contract/routes.js';
import { keyedFilePath, links, namedFilePath, routesOfTreeFile, treePaths } from '../edge/contract/tree.js';
import { matchRoute } from '../edge/router.js';
import { routeHandlers } from '../edge/endpoints/bindings.js';
import { createHandler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { requestsOfTreeFile } from '../edge/server/nginx-config.js';
import { renderSpecs } from '../build/render/resources.js';
import { readManifest } from './helpers/tree.js';
import { schemaForTreePath } from './helpers/schemas.js';

const tree = () => inject('fixtureTree');
const bytesOf = (path: string) => readFileSync(join(tree(), path));
const jsonOf = (path: string) => JSON.parse(bytesOf(path).toString('utf8')) as Record<string, unknown>;
const declared: readonly Route[] = routes;

// The ids the demo's examples name: the table's own examples, as the OpenAPI document does.
const GENE = { param: 'PRR5', id: 'ENSG00000186654' };
const ISOFORM = { param: 'ENST00000006251.11', id: 'ENST00000006251.11' };
const exampleOf = (route: Route) => (!isKeyedFile(route) ? null : route.file.per === 'gene' ? GENE : ISOFORM);

/** The file that answers a file route's plain request for the example. */
function fileOf(route: Route): string {
  if (!route.file) throw new Error(`${route.id} is not a file`);
  if (!isKeyedFile(route)) return namedFilePath(route.file as { name: string });
  return keyedFilePath(route, exampleOf(route)!.id, route.file.window === 'pages' ? 0 : undefined);
}

/** `links` by route id, called with a path parameter's value when the route has one. */
const linkFns = links as unknown as Record<string, (...id: string[]) => string>;
const linkOf = (route: Route, value = route.pathParams[0]?.example) =>
  linkFns[route.id](...(route.pathParams.length ? [value] : []));

describe.each(declared.map((r) => [r.id, r] as const))('route %s', (_, route) => {
  it.runIf(route.file !== undefined && isKeyedFile(route))(
    'is keyed by its one path parameter, and a list by the largest limit',
    () => {
      expect(route.pathParams).toHaveLength(1);
      if (isKeyedFile(route) && route.file.window !== undefined) expect(listSize(route)).toBeGreaterThan(0);
    },
  );

  it('has a link that the router maps back to it', () => {
    const link = linkOf(route);
    expect(link.startsWith('/api/v1')).toBe(true);
    expect(matchRoute(link)?.route.id).toBe(route.id);
  });

  it('is bound to the code that answers it', async () => {
    expect(typeof routeHandlers[route.id as keyof typeof routeHandlers]).toBe('function');
    if (!route.file) return;
    // A file route answers its plain request with the file itself.
    const handler = createHandler({ origin: new LocalOrigin(tree()) });
    const link = linkOf(route, exampleOf(route)?.param);
    const r = await handler(new Request(`http://atlas.test${link}`));
    expect(r.status).toBe(200);
    expect(Buffer.from(await r.arrayBuffer()).equals(bytesOf(fileOf(route)))).toBe(true);
  });

  it.runIf(route.file !== undefined)('has a tree path the demo release holds, which maps back to it', () => {
    const path = fileOf(route);
    expect(
      readManifest(tree()).entries.some((e) => e.path === path),
      path,
    ).toBe(true);
    expect(routesOfTreeFile(path).map((f) => f.route.id)).toContain(route.id);
    if (isKeyedFile(route)) {
      expect(
        (treePaths as unknown as Record<string, (id: string, page?: number) => string>)[route.id](
          exampleOf(route)!.id,
          route.file.window === 'pages' ? 0 : undefined,
        ),
      ).toBe(path);
      expect(renderSpecs[route.id as keyof typeof renderSpecs], 'render spec').toBeDefined();
    }
  });

  it.runIf(route.file !== undefined)('has its schema found from its tree path', () => {
    expect(schemaForTreePath(fileOf(route))).toBe(route.schema);
  });

  it.runIf(route.file !== undefined)('has an nginx location where the front can answer it from the file', () => {
    const path = fileOf(route);
    const uris = requestsOfTreeFile(path, null).map((r) => r.uri);
    const limit = route.integerParams.find((p) => p.name === 'limit');
    // A list whose default limit is less than its file is cut by the server, never the file as it is.
    if (limit && limit.default !== listSize(route)) return expect(uris).toEqual([]);
    expect(uris.map((uri) => matchRoute(uri)?.route.id)).toContain(route.id);
  });

  it.runIf(route.file !== undefined && route.id !== 'openapi')(
    'has an OpenAPI example: its file in the demo release',
    () => {
      const doc = jsonOf(treePaths.openapi) as {
        paths: Record<
          string,
          { get: { responses: Record<string, { content?: Record<string, { example?: unknown }> }> } }
        >;
      };
      const example = doc.paths[route.path].get.responses['200'].content?.['application/json']?.example;
      expect(example).toEqual(jsonOf(fileOf(route)));
    },
  );

  // A resource below a record (an isoform's domains, a gene's isoforms) is linked from that record.
  const parent = declared.find(
    (p) => p.file && route.path.startsWith(`${p.path}/`) && /^[a-z_]+$/.test(route.path.slice(p.path.length + 1)),
  );
  it.runIf(parent !== undefined)('is linked from the record it belongs to', () => {
    const record = jsonOf(fileOf(parent!)) as { links: Record<string, string | null> };
    const name = route.path.slice(parent!.path.length + 1);
    const id = exampleOf(parent!)!.id;
    expect(name in record.links, `${parent!.id} links.${name}`).toBe(true);
    // The structure link is null for an isoform without one; any other is the route's link.
    if (record.links[name] !== null) expect(record.links[name]).toBe(linkFns[route.id](id));
  });
});

describe('docs/ARCHITECTURE.md', () => {
  it('lists every route of the table under "The resources"', () => {
    const doc = readFileSync(join(__dirname, '../docs/ARCHITECTURE.md'), 'utf8');
    const [start, end] = [doc.indexOf('## The resources'), doc.indexOf('## Adding a resource')];
    expect(start, 'the section "The resources"').toBeGreaterThan(-1);
    expect(end, 'the section "Adding a resource", after it').toBeGreaterThan(start);
    const section = doc.slice(start, end);
    for (const route of routes) expect(section, route.id).toContain(`\`${route.id}\``);
  });
});
