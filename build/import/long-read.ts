// Long-read isoforms (SQANTI3 run on PacBio PB.x.y transcripts), attached to genes:
//  - associated_gene is one reference gene id → that gene;
//  - a fusion (`ENSG…_ENSG…`) → the first listed gene that is in the release; all are kept in
//    associated_genes;
//  - a novel locus (`novelGene_…`, SQANTI3's label for intergenic and antisense loci, or a gene id the
//    reference does not have) → a long-read-only gene whose id and symbol are that label.
import type { GtfTranscript } from './gtf.js';
import { InputError } from './input.js';
import type { SqantiRow } from './sqanti.js';
import { orfFromSqanti } from './orf.js';
import { unversioned, type GeneRecord, type IsoformRecord } from '../release-db/records.js';

/** The reference gene ids a SQANTI3 associated_gene label names (none for a novel locus). */
export function geneIdsOf(label: string): string[] {
  if (label.startsWith('novelGene')) return [];
  return label.split(/_(?=ENS)/).map(unversioned);
}

/** Checks that the classification row and the GTF transcript of long read `id` describe the same
 * isoform; returns the transcript. */
export function checkedTranscript(
  row: SqantiRow,
  t: GtfTranscript | null,
  files: { classification: string; gtf: string },
): GtfTranscript {
  if (!t)
    throw new InputError(
      files.classification,
      row.line,
      `isoform ${row.isoform} has no transcript in ${files.gtf}`,
      'isoform',
    );
  if (t.exonCount !== row.exons || t.length !== row.length) {
    throw new InputError(
      files.classification,
      row.line,
      `isoform ${row.isoform} has ${row.exons} exons and ${row.length} nt here but ${t.exonCount} exons and ${t.length} nt in ${files.gtf}: are they from the same SQANTI3 run?`,
      'length',
    );
  }
  return t;
}

/** The long-read gene a long read not on a reference gene makes (or widens): its label's. */
export function novelGene(row: SqantiRow, t: GtfTranscript): GeneRecord {
  return {
    gene_id: row.associatedGene,
    gene_id_versioned: null,
    symbol: row.associatedGene,
    biotype: null,
    source: 'long_read',
    chromosome: t.chromosome,
    strand: t.strand,
    start: t.start,
    end: t.end,
    canonical_transcript_id: null,
    canonical_rule: null,
  };
}

/** The isoform of long read `row` on gene `geneId`. */
export function longReadIsoform(
  row: SqantiRow,
  t: GtfTranscript,
  geneId: string,
  fasta: { sequence: string; stop: boolean } | null,
  ctx: { classificationFile: string; expressionSource: string | null },
): IsoformRecord {
  const associated = geneIdsOf(row.associatedGene);
  const sequence = row.coding ? (fasta?.sequence ?? row.orfSequence?.replace(/\*$/, '') ?? null) : null;
  const proteinLength = !row.coding
    ? null
    : sequence !== null
      ? sequence.length
      : row.orfLength !== null
        ? row.orfLength - (row.orfSequence?.endsWith('*') ? 1 : 0)
        : null;
  return {
    transcript_id: row.isoform,
    transcript_id_unversioned: null,
    transcript_name: null,
    transcript_name_source: 'generated',
    gene_id: geneId,
    source: 'long_read',
    transcript_type: null,
    structural_category: row.structuralCategory,
    associated_transcript: row.associatedTranscript,
    associated_genes: associated.length ? associated : [row.associatedGene],
    chromosome: t.chromosome,
    strand: t.strand,
    start: t.start,
    end: t.end,
    length: row.length,
    exon_count: row.exons,
    coding: row.coding,
    protein_length: proteinLength,
    protein_sequence: sequence,
    nmd: row.predictedNmd,
    nmd_source: row.predictedNmd === null ? null : 'sqanti3',
    expression_tpm: row.isoExp,
    expression_source: row.isoExp !== null ? ctx.expressionSource : null,
    tags: [],
    exons: t.exons,
    orf: row.coding
      ? orfFromSqanti(t, row, ctx.classificationFile, { sequence, stop: fasta ? fasta.stop : null })
      : null,
    qc: row.qc,
  };
}
