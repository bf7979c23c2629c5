// Isoform records: `/isoforms/{transcript_id}` — core record plus the six metrics.
import { links, treePaths } from '../../edge/contract/tree.js';
import type { IsoformBody, IsoformSummaryBody } from '../../edge/contract/schemas.js';
import type { GeneRow, IsoformRow } from './load.js';
import { TreeWriter } from './tree-writer.js';

/** The short form used in a gene's isoform list and pages. */
export function isoformSummary(iso: IsoformRow): IsoformSummaryBody {
  return {
    transcript_id: iso.transcript_id,
    transcript_name: iso.transcript_name,
    source: iso.source,
    canonical: iso.canonical,
    protein_length: iso.protein_length,
    metrics: iso.metrics,
    links: { self: links.isoform(iso.transcript_id) },
  };
}

export function isoformRecord(iso: IsoformRow, gene: GeneRow): IsoformBody {
  return {
    transcript_id: iso.transcript_id,
    transcript_id_unversioned: iso.transcript_id_unversioned,
    transcript_name: iso.transcript_name,
    transcript_name_source: iso.transcript_name_source,
    gene_id: iso.gene_id,
    gene_symbol: gene.symbol,
    source: iso.source,
    transcript_type: iso.transcript_type,
    structural_category: iso.structural_category,
    associated_transcript: iso.associated_transcript,
    associated_genes: iso.associated_genes,
    chromosome: iso.chromosome,
    strand: iso.strand,
    start: iso.start,
    end: iso.end,
    length: iso.length,
    exon_count: iso.exon_count,
    coding: iso.coding,
    protein_length: iso.protein_length,
    canonical: iso.canonical,
    expression_tpm: iso.expression_tpm,
    tags: iso.tags,
    metrics: iso.metrics,
    links: {
      self: links.isoform(iso.transcript_id),
      gene: links.gene(iso.gene_id),
      domains: links.domains(iso.transcript_id),
      neoantigens: links.neoantigens(iso.transcript_id),
      structure: iso.has_structure ? links.structure(iso.transcript_id) : null,
    },
  };
}

export async function renderIsoforms(w: TreeWriter, isoforms: IsoformRow[], genes: Map<string, GeneRow>, tick: () => void) {
  for (const iso of isoforms) {
    await w.json(treePaths.isoform(TreeWriter.safeId(iso.transcript_id)), isoformRecord(iso, genes.get(iso.gene_id)!));
    tick();
  }
}
