// The body of an isoform record (`/isoforms/{transcript_id}`: core record, exons, ORF and protein, QC,
// the metrics and the links to what is below it) and of its summary in a gene's lists.
import { links, linksBelow } from '../../edge/contract/tree.js';
import { routes } from '../../edge/contract/routes.js';
import type { IsoformBody, IsoformSummaryBody } from '../../edge/contract/schemas.js';
import type { GeneRow, IsoformDetail, IsoformRow } from './core-rows.js';
import { compareWithReference } from './orf-vs-reference.js';

const ISOFORM_ROUTE = routes.find((r) => r.id === 'isoform')!;

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

// Reference biotypes whose transcripts encode proteins: GENCODE transcript and gene types, NCBI
// Gene's "protein-coding" and HGNC's "protein-coding gene". NCBI's and HGNC's catch-alls say nothing
// either way (NCBI files immunoglobulin segments under "other"); any other biotype is non-coding.
const CODING_BIOTYPES = new Set([
  'protein_coding',
  'protein-coding',
  'protein-coding gene',
  'nonsense_mediated_decay',
  'non_stop_decay',
  'protein_coding_LoF',
  'polymorphic_pseudogene',
  'IG_C_gene',
  'IG_D_gene',
  'IG_J_gene',
  'IG_V_gene',
  'TR_C_gene',
  'TR_D_gene',
  'TR_J_gene',
  'TR_V_gene',
]);
const UNSAYING_BIOTYPES = new Set(['other', 'unknown', 'biological-region']);

/** Whether a predicted ORF sits on a non-coding biotype: the transcript's own type where the GTF
 * gives one, else its gene's GENCODE type; where the GTF has no types, a CDS the reference annotates
 * for the transcript or its gene says coding, and only a gene without one falls back to the gene-info
 * source's type (NCBI calls some GENCODE protein-coding readthroughs ncRNA); null when none is known.
 * An ORF the annotation states is not a prediction, so never flagged. */
export function onNoncodingBiotype(
  iso: Pick<IsoformRow, 'transcript_type'>,
  gene: Pick<GeneRow, 'biotype' | 'gene_type' | 'has_annotated_cds'>,
  orfSource: 'sqanti3' | 'gtf',
  annotatedCds = false,
): boolean | null {
  if (orfSource === 'gtf') return false;
  const gencode = iso.transcript_type ?? gene.biotype;
  if (gencode === null && (annotatedCds || gene.has_annotated_cds)) return false;
  const biotype = gencode ?? gene.gene_type;
  return biotype === null || UNSAYING_BIOTYPES.has(biotype) ? null : !CODING_BIOTYPES.has(biotype);
}

export function isoformRecord(iso: IsoformRow, gene: GeneRow, detail: IsoformDetail): IsoformBody {
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
    exons: detail.exons.map(([start, end]) => ({ start, end })),
    coding: iso.coding,
    protein_length: iso.protein_length,
    protein_sequence: detail.protein_sequence,
    orf: detail.orf && {
      ...detail.orf,
      ...compareWithReference(detail.orf, detail.reference_cds, iso.strand),
      noncoding_biotype: onNoncodingBiotype(iso, gene, detail.orf.source, detail.reference_cds !== null),
    },
    reference_cds: detail.reference_cds && {
      start: detail.reference_cds.start,
      end: detail.reference_cds.end,
      start_status: detail.reference_cds.start_status,
      end_status: detail.reference_cds.end_status,
      source: detail.reference_cds.source,
    },
    canonical: iso.canonical,
    expression_tpm: iso.expression_tpm,
    expression_source: iso.expression_source,
    tags: iso.tags,
    qc: detail.qc,
    metrics: iso.metrics,
    links: linksOf(iso),
  };
}

/** Every resource below the isoform, where the route table has it; the structure only when the
 * isoform has one. */
function linksOf(iso: IsoformRow): IsoformBody['links'] {
  const below = linksBelow(ISOFORM_ROUTE, iso.transcript_id);
  const all = {
    self: links.isoform(iso.transcript_id),
    gene: links.gene(iso.gene_id),
    ...below,
    structure: iso.has_structure ? below.structure : null,
  };
  return all as IsoformBody['links'];
}
