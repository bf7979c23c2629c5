// Where each v1 resource lives in the rendered tree. The renderer writes these paths and the edge
// function reads them: both import this module, so the layout is stated exactly once.
//
// Files are keyed by canonical identifiers only (unversioned gene id, full transcript id). Every other
// way of naming a resource (symbol in any case, transcript name, unversioned ENST id) is resolved by
// the edge through the alias maps before it reads a file.

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
  structureFile: (transcriptId: string) => `structures/${transcriptId}.cif`,
  /** Edge-only data: not API resources themselves, read by the edge function to answer requests. */
  aliases: 'edge/aliases.json',
  structureMap: 'edge/structures.json',
  searchIndex: 'edge/search-index.json',
  manifest: 'manifest.json',
} as const;

/** `edge/aliases.json`: lower-cased symbol, gene id, transcript id or name → canonical id (a symbol
 * naming several genes → the sorted list of their ids). */
export interface AliasMaps {
  genes: Record<string, string | string[]>;
  isoforms: Record<string, string>;
}

/** One entry of `edge/structures.json`, keyed by transcript id. */
export interface StructureMapEntry {
  /** Path of the mmCIF file in the tree (or below the structure base URL). */
  path: string;
  sha256: string | null;
  mean_plddt: number;
  model_source: string;
  provenance: 'real' | 'generated';
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
  structure: (transcriptId: string) =>
    `${API_PREFIX}/isoforms/${encodeURIComponent(transcriptId)}/structure`,
  search: () => `${API_PREFIX}/search`,
};

/** Content types by file extension, shared by the manifest, the publisher and the local server. */
export function contentTypeOf(path: string): string {
  if (path.endsWith('.json')) return 'application/json; charset=utf-8';
  if (path.endsWith('.cif')) return 'chemical/x-mmcif';
  return 'application/octet-stream';
}
