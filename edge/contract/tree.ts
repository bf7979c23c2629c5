// Where each v1 resource lives in the rendered tree. The renderer writes these paths and the edge
// function reads them: both import this module, so the layout is stated exactly once.
//
// Files are keyed by canonical identifiers only (unversioned gene id, full transcript id). Every other
// way of naming a resource (symbol in any case, transcript name, unversioned ENST id) is resolved by
// the edge through the (sharded) alias maps before it reads a file.

import { shardName } from './shards.js';
import { RELEASE_PARAM } from './routes.js';

export const API_VERSION = 'v1';
export const API_PREFIX = '/api/v1';

/** The isoform list of a gene is pre-split into pages of this many items: the largest `limit`. */
export const ISOFORM_PAGE_SIZE = 100;
/** How many ranked neoantigens an isoform's file holds: the largest `limit` of that route. */
export const NEOANTIGEN_TOP = 50;

/** Identifiers become file names, so they are restricted to a safe alphabet (checked at render time). */
export const SAFE_ID = /^[A-Za-z0-9][A-Za-z0-9._-]{0,199}$/;

export const treePaths = {
  release: 'api/v1/release.json',
  openapi: 'api/v1/openapi.json',
  gene: (geneId: string) => `api/v1/genes/${geneId}.json`,
  genePage: (geneId: string, page: number) => `api/v1/genes/${geneId}/isoforms/${page}.json`,
  isoform: (transcriptId: string) => `api/v1/isoforms/${transcriptId}.json`,
  domains: (transcriptId: string) => `api/v1/isoforms/${transcriptId}/domains.json`,
  neoantigens: (transcriptId: string) => `api/v1/isoforms/${transcriptId}/neoantigens.json`,
  ptm: (transcriptId: string) => `api/v1/isoforms/${transcriptId}/ptm.json`,
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

/** Format of edge/index.json and the edge data it describes: 3 since term shards are sorted term lists
 * (2 had MiniSearch term shards). An edge refuses any other. */
export const EDGE_INDEX_FORMAT = 3;
/** Format of manifest.json and its shards; edge/contract/manifest.ts parses them. */
export const MANIFEST_FORMAT = 2;

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
  format: typeof MANIFEST_FORMAT;
  /** Files listed in the shards (the tree less manifest.json and its shards), and their bytes. */
  files: number;
  bytes: number;
  shards: ManifestEntry[];
}

export interface ManifestShard {
  entries: ManifestEntry[];
}

/** Root-relative links written into bodies; a static file cannot know the host it is served from. */
export const links = {
  root: () => `${API_PREFIX}/`,
  release: () => `${API_PREFIX}/release`,
  openapi: () => `${API_PREFIX}/openapi.json`,
  gene: (geneId: string) => `${API_PREFIX}/genes/${encodeURIComponent(geneId)}`,
  geneIsoforms: (geneId: string, limit?: number, offset?: number) => {
    const base = `${API_PREFIX}/genes/${encodeURIComponent(geneId)}/isoforms`;
    return limit === undefined ? base : `${base}?limit=${limit}&offset=${offset ?? 0}`;
  },
  isoform: (transcriptId: string) => `${API_PREFIX}/isoforms/${encodeURIComponent(transcriptId)}`,
  domains: (transcriptId: string) => `${API_PREFIX}/isoforms/${encodeURIComponent(transcriptId)}/domains`,
  neoantigens: (transcriptId: string) =>
    `${API_PREFIX}/isoforms/${encodeURIComponent(transcriptId)}/neoantigens`,
  ptm: (transcriptId: string) => `${API_PREFIX}/isoforms/${encodeURIComponent(transcriptId)}/ptm`,
  structure: (transcriptId: string) =>
    `${API_PREFIX}/isoforms/${encodeURIComponent(transcriptId)}/structure`,
  search: () => `${API_PREFIX}/search`,
  docs: () => `${API_PREFIX}/docs`,
};

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
