// Real identifiers to request, taken from the tree being benchmarked (not hard-coded): the gene with
// the largest isoform page, one of its isoforms that has domains and neoantigens, and an isoform
// with a predicted structure.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';

export interface Samples {
  geneId: string;
  geneIdVersioned: string;
  symbol: string;
  transcriptId: string;
  transcriptName: string;
  structureTranscriptId: string;
  /** Tree paths (relative) of the files behind the file-backed routes, for nginx. */
  files: { gene: string; isoform: string; page: string; domains: string };
}

interface GeneFile {
  gene_id: string;
  gene_id_versioned: string;
  symbol: string;
  isoforms: {
    transcript_id: string;
    transcript_name: string;
    metrics: { domains: number | null; neoantigens: number | null };
  }[];
}

export function pickSamples(tree: string): Samples {
  const genesDir = join(tree, 'api/v1/genes');
  let best: { id: string; size: number } | null = null;
  for (const entry of readdirSync(genesDir, { withFileTypes: true })) {
    if (!entry.isDirectory()) continue;
    const size = statSync(join(genesDir, entry.name, 'isoforms/0.json')).size;
    if (!best || size > best.size) best = { id: entry.name, size };
  }
  if (!best) throw new Error(`no genes in ${genesDir}`);
  const gene = JSON.parse(readFileSync(join(genesDir, `${best.id}.json`), 'utf8')) as GeneFile;
  const isoform =
    gene.isoforms.find((i) => (i.metrics.domains ?? 0) > 0 && (i.metrics.neoantigens ?? 0) > 0) ?? gene.isoforms[0];
  const structure = readdirSync(join(tree, 'structures')).find((f) => f.endsWith('.cif'));
  if (!structure) throw new Error(`no structures in ${tree}`);
  return {
    geneId: gene.gene_id,
    geneIdVersioned: gene.gene_id_versioned,
    symbol: gene.symbol,
    transcriptId: isoform.transcript_id,
    transcriptName: isoform.transcript_name,
    structureTranscriptId: structure.slice(0, -'.cif'.length),
    files: {
      gene: `api/v1/genes/${gene.gene_id}.json`,
      isoform: `api/v1/isoforms/${isoform.transcript_id}.json`,
      page: `api/v1/genes/${gene.gene_id}/isoforms/0.json`,
      domains: `api/v1/isoforms/${isoform.transcript_id}/domains.json`,
    },
  };
}

/** A one-letter typo of a symbol (last letter or digit changed), for the fuzzy search. */
export function typo(symbol: string): string {
  const last = symbol.at(-1)!;
  const swap = /\d/.test(last) ? String((Number(last) + 1) % 10) : last.toUpperCase() === 'X' ? 'Y' : 'X';
  return symbol.slice(0, -1) + swap;
}

export interface RouteCase {
  name: string;
  path: string;
  /** Expected status: the benchmark fails if a route answers anything else. */
  status: number;
}

export function handlerRoutes(s: Samples): RouteCase[] {
  const api = '/api/v1';
  return [
    { name: 'release', path: `${api}/release`, status: 200 },
    { name: 'gene by symbol', path: `${api}/genes/${s.symbol.toLowerCase()}`, status: 200 },
    { name: 'gene by id', path: `${api}/genes/${s.geneIdVersioned}`, status: 200 },
    { name: 'gene isoforms (default page)', path: `${api}/genes/${s.symbol}/isoforms`, status: 200 },
    { name: 'gene isoforms limit=10', path: `${api}/genes/${s.symbol}/isoforms?limit=10`, status: 200 },
    { name: 'isoform by id', path: `${api}/isoforms/${s.transcriptId}`, status: 200 },
    { name: 'isoform by name', path: `${api}/isoforms/${s.transcriptName}`, status: 200 },
    { name: 'domains', path: `${api}/isoforms/${s.transcriptName}/domains`, status: 200 },
    { name: 'neoantigens limit=10', path: `${api}/isoforms/${s.transcriptName}/neoantigens?limit=10`, status: 200 },
    { name: 'structure redirect', path: `${api}/isoforms/${s.structureTranscriptId}/structure`, status: 307 },
    { name: 'search exact', path: `${api}/search?query=${encodeURIComponent(s.symbol)}`, status: 200 },
    { name: 'search prefix', path: `${api}/search?query=${encodeURIComponent(s.symbol.slice(0, 3))}`, status: 200 },
    { name: 'search fuzzy', path: `${api}/search?query=${encodeURIComponent(typo(s.symbol))}`, status: 200 },
    { name: 'unknown gene (404)', path: `${api}/genes/NOSUCHGENE1`, status: 404 },
  ];
}
