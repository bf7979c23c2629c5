// Each route of the contract (edge/contract/routes.ts) bound to its code: one module per resource.
// The type asks for exactly one handler per RouteId, so a route without code does not compile.
import type { RouteId } from '../contract/routes.js';
import type { RouteHandler } from './context.js';
import { openapi, release } from './release.js';
import { gene } from './genes.js';
import { geneIsoforms } from './gene-isoforms.js';
import { isoform } from './isoforms.js';
import { domains } from './domains.js';
import { neoantigens } from './neoantigens.js';
import { ptm } from './ptm.js';
import { structure } from './structure.js';
import { search } from './search.js';
import { releases } from './releases.js';
import { docs } from './docs.js';

export const routeHandlers: { readonly [id in RouteId]: RouteHandler } = {
  root: release,
  release,
  releases,
  openapi,
  docs,
  gene,
  geneIsoforms,
  isoform,
  domains,
  neoantigens,
  ptm,
  structure,
  search,
};
