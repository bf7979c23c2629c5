// Gene records (`/genes/{symbol}`) and each gene's isoform list pre-split into pages of
// ISOFORM_PAGE_SIZE (`/genes/{symbol}/isoforms`); the edge slices any limit/offset from these pages.
import { ISOFORM_PAGE_SIZE, links, treePaths } from '../../edge/contract/tree.js';
import type { GeneBody, IsoformPageBody } from '../../edge/contract/schemas.js';
import type { GeneRow, IsoformRow } from './load.js';
import { isoformSummary } from './isoforms.js';
import { TreeWriter } from './tree-writer.js';

export function geneRecord(gene: GeneRow, isoforms: IsoformRow[]): GeneBody {
  const canonical = isoforms.find((i) => i.canonical);
  return {
    gene_id: gene.gene_id,
    gene_id_versioned: gene.gene_id_versioned,
    symbol: gene.symbol,
    biotype: gene.biotype,
    source: gene.source,
    chromosome: gene.chromosome,
    strand: gene.strand,
    start: gene.start,
    end: gene.end,
    canonical_isoform:
      canonical && gene.canonical_rule
        ? { transcript_id: canonical.transcript_id, transcript_name: canonical.transcript_name, rule: gene.canonical_rule }
        : null,
    isoform_count: isoforms.length,
    isoforms: isoforms.map(isoformSummary),
    links: { self: links.gene(gene.gene_id), isoforms: links.geneIsoforms(gene.gene_id) },
  };
}

export function isoformPages(gene: GeneRow, isoforms: IsoformRow[]): IsoformPageBody[] {
  const pages: IsoformPageBody[] = [];
  const total = isoforms.length;
  for (let offset = 0; offset < total || (total === 0 && offset === 0); offset += ISOFORM_PAGE_SIZE) {
    const next = offset + ISOFORM_PAGE_SIZE;
    pages.push({
      gene_id: gene.gene_id,
      symbol: gene.symbol,
      total,
      limit: ISOFORM_PAGE_SIZE,
      offset,
      next: next < total ? links.geneIsoforms(gene.gene_id, ISOFORM_PAGE_SIZE, next) : null,
      items: isoforms.slice(offset, next).map(isoformSummary),
    });
    if (total === 0) break;
  }
  return pages;
}

export async function renderGenes(w: TreeWriter, genes: GeneRow[], byGene: Map<string, IsoformRow[]>, tick: () => void) {
  for (const gene of genes) {
    const id = TreeWriter.safeId(gene.gene_id);
    const isoforms = byGene.get(gene.gene_id) ?? [];
    await w.json(treePaths.gene(id), geneRecord(gene, isoforms));
    const pages = isoformPages(gene, isoforms);
    for (let n = 0; n < pages.length; n++) await w.json(treePaths.genePage(id, n), pages[n]);
    tick();
  }
}
