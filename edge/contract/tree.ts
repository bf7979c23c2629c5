// Where each v1 resource lives in the rendered tree, and the links to it. The renderer writes these
// paths, the edge function and the nginx front read them: all import this module, and the paths and
// links of the routes are derived from the route table (routes.ts), so the layout is stated once.
//
// Files are keyed by canonical identifiers only (unversioned gene id, full transcript id). Every other
// way of naming a resource (symbol in any case, transcript name, unversioned ENST id) is resolved by
// the edge through the (sharded) alias maps before it reads a file.

import { shardName } from './shards.js';
import {
  RELEASE_PARAM,
  isKeyedFile,
  keyedFileRoutes,
  routes,
  type KeyedFileRoute,
  type Route,
  type RouteId,
} from './routes.js';

export const API_VERSION = 'v1';
export const API_PREFIX = '/api/v1';
/** Where the API's files are in the tree: a request's path below API_PREFIX is a file's below this. */
const API_TREE = 'api/v1';
/** The route table as its declared shape, for reading the fields some routes leave out. */
const declared: readonly Route[] = routes;

/** Identifiers become file names, so they are restricted to a safe alphabet (checked at render time). */
export const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

/** The route's path with `id` for its one parameter (a keyed file route has exactly one), as given:
 * a link encodes it first, a decoded request path (nginx's map) does not. */
export const withId = (route: Pick<Route, 'path'>, id: string) => route.path.replace(/\{[^}]+\}/, id);

/** The file of a keyed file route for one canonical id (and page, for `pages`). */
export function keyedFilePath(route: Pick<Route, 'path'>, id: string, page?: number): string {
  return `${API_TREE}${withId(route, id)}${page === undefined ? '' : `/${page}`}.json`;
}

/** The file of a route that is one file (release.json, openapi.json). */
export const namedFilePath = (file: { name: string }) => `${API_TREE}/${file.name}`;

const namedFile = (id: RouteId): string => {
  const file = declared.find((r) => r.id === id)?.file;
  if (!file || !('name' in file)) throw new Error(`route ${id} is not declared as one named file`);
  return namedFilePath(file);
};

type KeyedPath<R> = R extends { file: { window: 'pages' } }
  ? (id: string, page: number) => string
  : (id: string) => string;
/** The tree path of each keyed file route, by route id: `treePaths.<id>(canonicalId)`, and
 * `treePaths.<id>(canonicalId, page)` for a `pages` list. Derived from the route table, never written
 * by hand. */
const keyedPaths = Object.fromEntries(
  keyedFileRoutes.map((r) => [r.id, (id: string, page?: number) => keyedFilePath(r, id, page)]),
) as {
  [R in KeyedFileRoute as R['id']]: KeyedPath<R>;
};

export const treePaths = {
  release: namedFile('release'),
  openapi: namedFile('openapi'),
  ...keyedPaths,
  structureFile: (transcriptId: string) => `structures/${transcriptId}.cif`,
  /** The docs page (`/api/v1/docs`) and the files it loads (`/api/v1/docs/<file>`). */
  docs: (file: string) => `api/v1/docs/${file}`,
  /** Edge-only data: not API resources themselves, read by the edge function to answer requests.
   * Each large table is sharded (contract/shards.ts) so an edge instance loads only what it needs;
   * `edgeIndex` says how many shards each table has and describes the search index's shards. */
  edgeIndex: 'edge/index.json',
  geneAliases: (shard: number) => `edge/genes/${shardName(shard)}.json`,
  isoformAliases: (shard: number) => `edge/isoforms/${shardName(shard)}.json`,
  structureMap: (shard: number) => `edge/structures/${shardName(shard)}.json`,
  searchTerms: (shard: number) => `edge/search/terms/${shardName(shard)}.json`,
  searchTypo: (shard: number) => `edge/search/typo/${shardName(shard)}.json`,
  /** The manifest: an index naming its shards (with their hashes), and the shards listing every
   * other file of the tree with its size and sha256. */
  manifest: 'manifest.json',
  manifestShard: (shard: number) => `manifest/${shardName(shard)}.json`,
} as const;

/** Format of edge/index.json and the edge data it describes: 4 since the search index has a name field
 * (the words of genes' full names) and lists a gene with its full name (3 had neither; 2 had MiniSearch
 * term shards). An edge refuses any other. */
export const EDGE_INDEX_FORMAT = 4;
/** Format of manifest.json and its shards; edge/contract/manifest.ts parses them. 3 since a published
 * shard may be a delta on earlier shard objects (readers still accept 2, whose shards are all full). */
export const MANIFEST_FORMAT = 3;

/** `edge/index.json`: the shard counts of the edge's tables and the search index's directory. */
export interface EdgeIndex {
  format: typeof EDGE_INDEX_FORMAT;
  /** Lower-cased symbol, gene id or versioned gene id → gene id (a symbol naming several genes → the
   * sorted list of their ids, which the edge answers with 409 and the choices). */
  gene_aliases: { shards: number };
  /** Lower-cased transcript id, unversioned ENST id or transcript name → transcript id. */
  isoform_aliases: { shards: number };
  /** Transcript id → StructureMapEntry. */
  structures: { shards: number };
  search: SearchDirectory;
  /** The sha256 of every shard file above, by path. The edge checks a shard against it (edge/index.json
   * itself being checked against the manifest), so loading a shard costs no manifest shard. */
  sha256: Record<string, string>;
}

/** The search index is split two ways (see contract/search.ts): by term range for exact and prefix
 * matches, and by the ends of gene symbols for typo-tolerant matches. */
export interface SearchDirectory {
  /** Term shards in term order: shard i holds the terms t with terms[i].from <= t < terms[i + 1].from. */
  terms: { from: string; terms: number }[];
  /** Typo shards, hashed by typo key (contract/search.ts typoKeys). */
  typo: { shards: number };
  /** How many documents (genes and isoforms) the index has: their numbers are 0 … documents - 1. */
  documents: number;
  /** The common words of full names (contract/search.ts COMMON_NAME_WORD_SHARE), each with how many
   * genes' names hold it, in term order; absent in a tree built before they were listed (none then). */
  common_words?: Record<string, number>;
}

/** One shard of a hashed table: key → value. */
export type ShardBody<T> = Record<string, T>;

/** One entry of the structure map, keyed by transcript id. */
export interface StructureMapEntry {
  /** Path of the mmCIF file in the tree (or below the structure base URL). */
  path: string;
  sha256: string | null;
  mean_plddt: number;
  model_source: string;
  provenance: 'real' | 'generated';
}

/** One file of the tree, as the manifest lists it. */
export interface ManifestEntry {
  path: string;
  size: number;
  sha256: string;
  content_type: string;
}

/** `manifest.json`: what the tree holds. Its shards are listed (and hashed) here; every other file is
 * listed in exactly one shard, the one its path hashes to. */
export interface ManifestIndex {
  release: string;
  api_version: string;
  format: typeof MANIFEST_FORMAT | 2;
  /** Files listed in the shards (the tree less manifest.json and its shards), and their bytes. */
  files: number;
  bytes: number;
  shards: ManifestEntry[];
  /** In a published store only: the release's pack list (edge/contract/packs.ts), an object of the
   * store, so a mirror fetches the release in a few large reads. A rendered tree has none. */
  packs?: { sha256: string; size: number };
}

/** A shard object. Full (as a rendered tree has them): `entries` is the shard. A delta (written by
 * publish, edge/contract/manifest.ts): `entries` added or changed and `removed` paths since its first
 * base, and `bases`, the chain of shard objects it applies to, nearest first, ending with a full one. */
export interface ManifestShard {
  entries: ManifestEntry[];
  removed?: string[];
  bases?: { sha256: string; size: number }[];
}

/** Query parameters of a link, in the order given. */
export type LinkQuery = Record<string, string | number>;
type LinkOf<R> = R extends { pathParams: readonly [] }
  ? (query?: LinkQuery) => string
  : (id: string, query?: LinkQuery) => string;

/** A route's link, with the value of its path parameter when it has one. */
export function linkTo(route: Pick<Route, 'path'>, id?: string, query?: LinkQuery): string {
  const path = id === undefined ? route.path : withId(route, encodeURIComponent(id));
  const pairs = Object.entries(query ?? {}).map(([name, value]) => `${name}=${encodeURIComponent(value)}`);
  return `${API_PREFIX}${path}${pairs.length ? `?${pairs.join('&')}` : ''}`;
}

const linkFunction = (route: Route) =>
  route.pathParams.length === 0
    ? (query?: LinkQuery) => linkTo(route, undefined, query)
    : (id: string, query?: LinkQuery) => linkTo(route, id, query);

/** Root-relative links written into bodies (a static file cannot know the host it is served from), one
 * per route, by route id: `links.<id>(value of its path parameter, query?)`, or `links.<id>(query?)`
 * for a route without one. Derived from the route table. */
export const links = Object.fromEntries(declared.map((r) => [r.id, linkFunction(r)])) as {
  [R in (typeof routes)[number] as R['id']]: LinkOf<R>;
};

/** The links of a record to the resources below it (the routes whose path is the record's plus one
 * literal segment), each named by that segment (a gene's `isoforms`), in the table's order. */
export function linksBelow(route: Pick<Route, 'path'>, id: string): Record<string, string> {
  const below: Record<string, string> = {};
  for (const r of declared) {
    const rest = r.path.startsWith(`${route.path}/`) ? r.path.slice(route.path.length + 1) : null;
    if (rest && /^[a-z_]+$/.test(rest)) below[rest] = linkTo(r, id);
  }
  return below;
}

/** A file of the tree as a route's answer: the route, and the canonical id (and page) it is for. */
export interface TreeFileRoute {
  route: Route;
  id?: string;
  page?: number;
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
/** Each file route's tree paths as a pattern: the inverse of keyedFilePath and namedFile. */
const treePatterns = declared.flatMap((route) => {
  if (!route.file) return [];
  if ('name' in route.file) return [{ route, pattern: new RegExp(`^${escapeRegex(namedFilePath(route.file))}$`) }];
  const [before, after] = route.path.split(/\{[^}]+\}/);
  const page = isKeyedFile(route) && route.file.window === 'pages' ? '/(\\d+)' : '';
  return [
    { route, pattern: new RegExp(`^${escapeRegex(API_TREE + before)}([^/]+)${escapeRegex(after)}${page}\\.json$`) },
  ];
});

/** The routes a file of the tree answers (release.json answers two), with the id and page it is for;
 * empty for a file that is not a route's answer (edge data, the manifest, structures, the docs). */
export function routesOfTreeFile(path: string): TreeFileRoute[] {
  const out: TreeFileRoute[] = [];
  for (const { route, pattern } of treePatterns) {
    const m = pattern.exec(path);
    if (m) out.push({ route, id: m[1], page: m[2] === undefined ? undefined : Number(m[2]) });
  }
  return out;
}

/** A link as an answer pinned to `release` writes it: a link into the API gets RELEASE_PARAM (which
 * every route takes); any other link is left as it is. */
export function pinLink(link: string, release: string): string {
  if (link !== API_PREFIX && !link.startsWith(`${API_PREFIX}/`) && !link.startsWith(`${API_PREFIX}?`)) return link;
  return `${link}${link.includes('?') ? '&' : '?'}${RELEASE_PARAM}=${encodeURIComponent(release)}`;
}

/** The docs page's file in the tree, and the files it loads (served at `/api/v1/docs/<name>`). */
export const DOCS_PAGE = 'index.html';
export const DOCS_ASSETS = ['swagger-ui-bundle.js', 'swagger-ui.css', 'docs.js', 'swagger-ui-LICENSE.txt'] as const;

/** Content types by file extension, shared by the manifest, the publisher and the local server. */
export function contentTypeOf(path: string): string {
  if (path.endsWith('.json')) return 'application/json; charset=utf-8';
  if (path.endsWith('.cif')) return 'chemical/x-mmcif';
  if (path.endsWith('.html')) return 'text/html; charset=utf-8';
  if (path.endsWith('.js')) return 'text/javascript; charset=utf-8';
  if (path.endsWith('.css')) return 'text/css; charset=utf-8';
  if (path.endsWith('.txt')) return 'text/plain; charset=utf-8';
  return 'application/octet-stream';
}
