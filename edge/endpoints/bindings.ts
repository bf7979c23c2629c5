// Each route of the contract (edge/contract/routes.ts) bound to the code that answers it: every route
// declared as a file of the tree to the one file endpoint, every other to its own module. The type
// asks for a module for exactly the routes that are not files, so such a route without code does not
// compile, and a file route needs none.
import { routes, type RouteId } from '../contract/routes.js';
import type { RouteHandler } from './route-request.js';
import { treeFileEndpoint } from './tree-file.js';
import { structure } from './structure-redirect.js';
import { search } from './search-results.js';
import { releases } from './release-list.js';
import { docs } from './docs-page.js';
import { changes } from './release-changes.js';

type FileRouteId = Extract<(typeof routes)[number], { file: object }>['id'];

const computed: { readonly [id in Exclude<RouteId, FileRouteId>]: RouteHandler } = {
  releases,
  changes,
  docs,
  structure,
  search,
};

export const routeHandlers = Object.fromEntries(
  routes.map((route) => [route.id, 'file' in route ? treeFileEndpoint(route) : computed[route.id]]),
) as { readonly [id in RouteId]: RouteHandler };
