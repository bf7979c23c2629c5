// The v1 route table: paths, parameters with their bounds, response schemas and cache policy.
// The edge function routes and validates from it, the OpenAPI document is generated from it, and the
// contract tests iterate over it. Paths are relative to API_PREFIX.
import type { SchemaName } from './schemas.js';

export interface IntegerParam {
  name: string;
  description: string;
  minimum: number;
  maximum?: number;
  default?: number;
}
export interface StringParam {
  name: string;
  description: string;
  minLength: number;
  maxLength: number;
  required: boolean;
}

/** The most characters one path segment may have, once percent-decoded. */
export const PATH_SEGMENT_MAX = 200;
/** What one path parameter may be, once percent-decoded: 1–PATH_SEGMENT_MAX characters, none of them
 * `/`, `\` or a control character, and not `.` or `..` (a segment that could name another path). The
 * router enforces it and the OpenAPI document states it. */
export const PATH_SEGMENT_PATTERN = `^(?!\\.{1,2}$)[^/\\\\\\u0000-\\u001f\\u007f]{1,${PATH_SEGMENT_MAX}}$`;

export interface PathParam {
  name: string;
  description: string;
  example: string;
}

/** How a route is answered from the rendered tree, when it is a file of it: the renderer writes the
 * file, the edge serves it, and the nginx front maps the request to it (edge/contract/tree.ts derives
 * the path and the link; edge/endpoints/tree-file.ts answers every such route). */
export type FileBacking =
  /** One file answers the route: `api/v1/<name>`. */
  | { name: string }
  /** One file per gene or per isoform, named by its canonical id: the route's path with that id for its
   * one path parameter (resolved through the alias maps), under `api/v1`, plus `.json`. `window` says
   * how `limit` reads a list: `prefix`, the file holds the first items up to `limit`'s maximum and a
   * smaller limit is its prefix; `pages`, the list is pre-split into pages of `limit`'s maximum
   * (`<path>/<n>.json`, each with the link to the next), and any other window is cut from them. */
  | { per: 'gene' | 'isoform'; window?: 'prefix' | 'pages' };

export type CachePolicy = 'release' | 'search' | 'redirect';
/** Cache-Control per policy. Release-scoped files change only with a new release (the ETag is the
 * content hash, so revalidation is cheap); search is computed per request and kept short. */
export const cacheControl: Record<CachePolicy, string> = {
  release: 'public, max-age=3600, stale-while-revalidate=86400',
  search: 'public, max-age=60',
  redirect: 'public, max-age=3600',
};

export interface Route {
  readonly id: string;
  /** OpenAPI-style template, e.g. `/genes/{symbol}`. */
  path: string;
  summary: string;
  description: string;
  pathParams: readonly PathParam[];
  integerParams: readonly IntegerParam[];
  stringParams: readonly StringParam[];
  /** The schema of a 200 body; null for the redirect route and the docs page. */
  schema: SchemaName | null;
  /** The 200's media type when it is not JSON. */
  mediaType?: string;
  status: 200 | 307;
  cache: CachePolicy;
  tag: 'genes' | 'isoforms' | 'search' | 'release';
  /** Set when the route is a file of the tree; absent when its answer is computed (search, the
   * structure redirect, the release list, its changes, the docs page). */
  file?: FileBacking;
}

const limit = (max: number, def: number): IntegerParam => ({
  name: 'limit',
  description: `Items per response, 1–${max}`,
  minimum: 1,
  maximum: max,
  default: def,
});
const offset: IntegerParam = { name: 'offset', description: 'Items to skip', minimum: 0, default: 0 };
const transcriptParam = {
  name: 'transcript_id',
  description:
    'ENST… id with or without its version, PB.x.y long-read id, or transcript name (case-insensitive). Every form returns the same body.',
  example: 'ENST00000006251.11',
};
const symbolParam = {
  name: 'symbol',
  description: 'Gene symbol (case-insensitive) or Ensembl gene id with or without version',
  example: 'PRR5',
};

/** Every route takes it: the published release to answer from (GET /releases lists them); without
 * it, the current release answers. Every answer names its release in RELEASE_HEADER, and every link
 * of an answer to a request that named one carries it (edge/pinning.ts). */
export const RELEASE_PARAM = 'release';
export const RELEASE_HEADER = 'X-Isoatlas-Release';
/** The release to answer from when RELEASE_PARAM is absent, not carried into links: the CDN's gate
 * names the current release with it, so the cache keys answers by release while the CDN answers a
 * viewer's request with the same body as a server without the gate does. */
export const DEFAULT_RELEASE_PARAM = 'default_release';
const releaseName = { minLength: 1, maxLength: 100, required: false };
const releaseParams: readonly StringParam[] = [
  {
    name: RELEASE_PARAM,
    description:
      'Answer from this published release (GET /api/v1/releases lists them); default: the current release. Every link into the API in the answer (in its body and its Link header) carries it, so a client following links stays on this release.',
    ...releaseName,
  },
  {
    name: DEFAULT_RELEASE_PARAM,
    description: `Answer from this release when \`${RELEASE_PARAM}\` is not given, without carrying it into links. The CDN adds the current release under this name to every API request that names none, so that its cache keeps each release's answers apart; clients pin a release with \`${RELEASE_PARAM}\`. Giving both is a 400.`,
    ...releaseName,
  },
];

/** Every v1 route: the one declaration of each resource. A route with a `file` is rendered by its render
 * spec (build/render/resources.ts) and answered by the one file endpoint; any other is bound to its
 * own module in edge/endpoints/bindings.ts. Both are typed by this table, so a route added here without
 * its render spec or its module does not compile (docs/ARCHITECTURE.md, "Adding a resource"). */
export const routes = [
  {
    id: 'root',
    path: '/',
    summary: 'Release metadata and links to the endpoints',
    description: 'The same body as /release.',
    pathParams: [],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'Release',
    status: 200,
    cache: 'release',
    tag: 'release',
    file: { name: 'release.json' },
  },
  {
    id: 'release',
    path: '/release',
    summary: 'Release metadata',
    description: 'Version, date, sources of each track, counts, and which tracks are generated.',
    pathParams: [],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'Release',
    status: 200,
    cache: 'release',
    tag: 'release',
    file: { name: 'release.json' },
  },
  {
    id: 'releases',
    path: '/releases',
    summary: 'The published releases, and which is current',
    description:
      'Oldest first. Any of them can be asked for with the `release` query parameter on every endpoint; a mirror or local server of one tree lists that one.',
    pathParams: [],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'ReleaseList',
    status: 200,
    cache: 'search',
    tag: 'release',
  },
  {
    id: 'changes',
    path: '/releases/{release}/changes',
    summary: 'Every gene and isoform added, removed or changed in a release',
    description:
      "Relative to the release it follows in the store's history (GET /api/v1/releases, oldest first), or to `since`, an older kept release: the net change between the two (a record changed and changed back, or added and removed again, in between is not listed). A gene or isoform is listed when the bytes of one of its resources differ: its record, or what is below it (an isoform's domains, neoantigens, PTM sites or structure file; a gene's isoform pages); `parts` says which. Ordered genes first, then isoforms, each by id. Each item links to the record in the release it was in before and in this one (null for the side it is missing from). Computed from the releases' manifests, reading only the manifest shards that differ. A server of one tree (not a published store) answers 404: it holds no history.",
    pathParams: [
      {
        name: 'release',
        description: 'A release this atlas keeps (GET /api/v1/releases lists them)',
        example: '2026.11',
      },
    ],
    integerParams: [limit(100, 100), offset],
    stringParams: [
      {
        name: 'since',
        description:
          'An older release this atlas keeps: list the net change from it to `release` (default: the release `release` follows)',
        ...releaseName,
      },
      ...releaseParams,
    ],
    schema: 'ReleaseChanges',
    status: 200,
    cache: 'release',
    tag: 'release',
  },
  {
    id: 'gene',
    path: '/genes/{symbol}',
    summary: 'A gene and the summary of each of its isoforms',
    description:
      'A symbol shared by several genes (e.g. Y_RNA) answers 409 Conflict with the candidate gene ids in `choices` (a 4xx, so clients that raise on errors do not take it for a gene); use a gene id to pick one.',
    pathParams: [symbolParam],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'Gene',
    status: 200,
    cache: 'release',
    tag: 'genes',
    file: { per: 'gene' },
  },
  {
    id: 'geneIsoforms',
    path: '/genes/{symbol}/isoforms',
    summary: "A page of a gene's isoforms",
    description: 'Ordered canonical first, then reference isoforms by name, then long-read isoforms by id.',
    pathParams: [symbolParam],
    integerParams: [limit(100, 100), offset],
    stringParams: releaseParams,
    schema: 'IsoformPage',
    status: 200,
    cache: 'release',
    tag: 'genes',
    file: { per: 'gene', window: 'pages' },
  },
  {
    id: 'isoform',
    path: '/isoforms/{transcript_id}',
    summary: 'An isoform: core record and summary metrics',
    description: 'Δlength, NMD, domain, neoantigen and PTM counts, and mean pLDDT.',
    pathParams: [transcriptParam],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'Isoform',
    status: 200,
    cache: 'release',
    tag: 'isoforms',
    file: { per: 'isoform' },
  },
  {
    id: 'domains',
    path: '/isoforms/{transcript_id}/domains',
    summary: 'Pfam and TED domains of an isoform',
    description: 'Ordered by start position.',
    pathParams: [transcriptParam],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'DomainList',
    status: 200,
    cache: 'release',
    tag: 'isoforms',
    file: { per: 'isoform' },
  },
  {
    id: 'neoantigens',
    path: '/isoforms/{transcript_id}/neoantigens',
    summary: 'Top predicted neoantigens of an isoform, best first',
    description: 'Ranked by predicted affinity (lowest nM first), then percentile rank.',
    pathParams: [transcriptParam],
    integerParams: [limit(50, 50)],
    stringParams: releaseParams,
    schema: 'NeoantigenList',
    status: 200,
    cache: 'release',
    tag: 'isoforms',
    file: { per: 'isoform', window: 'prefix' },
  },
  {
    id: 'ptm',
    path: '/isoforms/{transcript_id}/ptm',
    summary: 'Post-translational modification sites of an isoform',
    description: 'Every site, ordered by position; positions are 1-based on the isoform’s protein_sequence.',
    pathParams: [transcriptParam],
    integerParams: [],
    stringParams: releaseParams,
    schema: 'PtmSiteList',
    status: 200,
    cache: 'release',
    tag: 'isoforms',
    file: { per: 'isoform' },
  },
  {
    id: 'structure',
    path: '/isoforms/{transcript_id}/structure',
    summary: 'Redirect to the mmCIF file of the predicted structure',
    description: '307 Temporary Redirect; 404 when the isoform has no predicted structure.',
    pathParams: [transcriptParam],
    integerParams: [],
    stringParams: releaseParams,
    schema: null,
    status: 307,
    cache: 'redirect',
    tag: 'isoforms',
  },
  {
    id: 'search',
    path: '/search',
    summary: 'Search genes and isoforms',
    description:
      "Case-insensitive over gene symbols, gene ids, transcript ids and transcript names, genes' synonyms (other symbols: ERK2 finds MAPK1) and genes' full names: `mitogen-activated protein kinase 1` finds MAPK1 first, `proline rich` the genes whose names hold both words; a hyphen or other punctuation separates words, so `mitogen activated` finds the same. Each record appears once, in its best tier: exact matches first (a whole symbol, id, name or synonym, or a full name holding every word of a query word), then prefix matches (of symbols, ids, names and the words of full names), then gene symbols one typo away (a wrong, missing or extra letter, or two neighbouring letters swapped; words of 3 characters or more). A query of several words is matched by prefix and by typo only in its words that match nothing exactly (the word being typed, a typo). `score` ranks within a tier, summed over the query's words, each counting its best match: exact 1; a word of a full name 0.6; prefix the share of the matched term that was typed (of a word of a full name, times 0.6); fuzzy 0.5 for a swap or a missing letter, 0.25 for a wrong or extra letter; a match through a synonym counts half, so a record whose own symbol, id or name the query is ranks first. A full name holding every word of the query gains 0.1 when they stand in the query's order side by side, 0.15 more when they are the whole name, and 0.1 × the query's words ÷ the name's words: an exact symbol or id still ranks first (1 against at most 0.95 for a one-word name), then the exact full name, then names holding the words as a phrase, shorter names first (`proline rich 5` before `proline rich 5 like`), then names holding them anywhere. Ties: genes before isoforms, then by id. `total` counts every match; a very short prefix is matched only in the first terms it starts (up to a few thousand).",
    pathParams: [],
    integerParams: [limit(25, 10)],
    stringParams: [
      { name: 'query', description: 'Text to search for', minLength: 1, maxLength: 100, required: true },
      ...releaseParams,
    ],
    schema: 'SearchResults',
    status: 200,
    cache: 'search',
    tag: 'search',
  },
  {
    id: 'docs',
    path: '/docs',
    summary: 'This API documented in a browser, with a "try it" for every endpoint',
    description: 'An HTML page (Swagger UI over /openapi.json), served with the release: it works offline on a mirror.',
    pathParams: [],
    integerParams: [],
    stringParams: releaseParams,
    schema: null,
    mediaType: 'text/html',
    status: 200,
    cache: 'release',
    tag: 'release',
  },
  {
    id: 'openapi',
    path: '/openapi.json',
    summary: 'This OpenAPI 3.1 document',
    description: '',
    pathParams: [],
    integerParams: [],
    stringParams: releaseParams,
    schema: null,
    status: 200,
    cache: 'release',
    tag: 'release',
    file: { name: 'openapi.json' },
  },
] as const satisfies readonly Route[];

export type RouteId = (typeof routes)[number]['id'];
/** The routes that are one file per gene or isoform, with their literal declarations. */
export type KeyedFileRoute = Extract<(typeof routes)[number], { file: { per: string } }>;

/** Whether a route is one file per gene or isoform. */
export const isKeyedFile = (route: Route): route is Route & { file: Extract<FileBacking, { per: string }> } =>
  route.file !== undefined && 'per' in route.file;

/** The routes that are one file per gene or isoform, in the table's order. */
export const keyedFileRoutes = routes.filter(isKeyedFile) as unknown as readonly KeyedFileRoute[];

/** How many items a list file holds: the page size of `pages`, the length of a `prefix`; the largest
 * `limit` the route takes, so every request is answered from the file or cut from it. */
export function listSize(route: Route): number {
  const max = route.integerParams.find((p) => p.name === 'limit')?.maximum;
  if (max === undefined) throw new Error(`route ${route.id} is a list file but declares no maximum limit`);
  return max;
}
