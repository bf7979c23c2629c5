// Rows of the core tables as TypeScript values (booleans and arrays before SQLite encoding): what the
// importers assemble and insert, and what the renderer reads back.
export interface GeneRecord {
  gene_id: string;
  gene_id_versioned: string | null;
  symbol: string;
  biotype: string | null;
  source: 'reference' | 'long_read';
  chromosome: string;
  strand: '+' | '-';
  start: number;
  end: number;
  canonical_transcript_id: string | null;
  canonical_rule:
    | 'MANE_Select'
    | 'Ensembl_canonical'
    | 'longest_annotated_cds'
    | 'longest_coding'
    | 'longest_transcript'
    | null;
  /** The HGNC id the reference annotation gives the gene (GENCODE GTF `hgnc_id`); set by the core
   * import after assembly. */
  hgnc_id?: string | null;
}

/** What a gene-info source says about a gene (table gene_info; null / empty where it says nothing). */
export interface GeneInfo {
  name: string | null;
  synonyms: string[];
  gene_type: string | null;
  ncbi_gene_id: string | null;
  hgnc_id: string | null;
  uniprot_ids: string[];
}

export interface IsoformRecord {
  transcript_id: string;
  transcript_id_unversioned: string | null;
  transcript_name: string | null; // filled by the naming step when the GTF has none
  transcript_name_source: 'gtf' | 'generated';
  gene_id: string;
  source: 'reference' | 'long_read';
  transcript_type: string | null;
  structural_category: string | null;
  associated_transcript: string | null;
  associated_genes: string[];
  chromosome: string;
  strand: '+' | '-';
  start: number;
  end: number;
  length: number;
  exon_count: number;
  coding: boolean | null;
  protein_length: number | null;
  protein_sequence: string | null;
  nmd: boolean | null;
  nmd_source: string | null;
  expression_tpm: number | null;
  /** Which quantification the TPM comes from (each input set's TPMs are normalized on their own). */
  expression_source: string | null;
  tags: string[];
  /** [start, end] of each exon (genomic, 1-based, inclusive), 5′ to 3′. */
  exons: [number, number][];
  orf: OrfRecord | null;
  /** The CDS the reference annotation states for this transcript (reference isoforms with an annotated
   * CDS); absent or null otherwise. */
  reference_cds?: ReferenceCds | null;
  qc: SqantiQc | null;
}

/** How an end of an annotated CDS is known: genePred's cmpl / incmpl / unk, GENCODE's start_codon /
 * stop_codon features and cds_start_NF / cds_end_NF tags. */
export type CdsEndStatus = 'complete' | 'incomplete' | 'unknown';

/** The coding sequence a reference annotation states for a transcript. */
export interface ReferenceCds {
  /** Genomic bounds, 1-based inclusive, start ≤ end whatever the strand; the stop codon included. */
  start: number;
  end: number;
  /** The start codon's end (5′ on the transcript) and the stop codon's end (3′). */
  start_status: CdsEndStatus;
  end_status: CdsEndStatus;
  source: 'genepred' | 'gtf';
}

/** 5′ partial: no start codon (the protein does not begin with M); 3′ partial: no stop codon;
 * internal: both (TransDecoder's terms). */
export type OrfCompleteness = 'complete' | '5prime_partial' | '3prime_partial' | 'internal';

/** The open reading frame behind an isoform's protein. */
export interface OrfRecord {
  /** Genomic bounds, 1-based inclusive, start ≤ end whatever the strand; the stop codon included when there is one. */
  start: number;
  end: number;
  /** The same bounds on the transcript, 1-based from its 5′ end. */
  transcript_start: number;
  transcript_end: number;
  completeness: OrfCompleteness;
  /** Where the ORF comes from: SQANTI3's ORF prediction, or the GTF's CDS features. */
  source: 'sqanti3' | 'gtf';
}

/** SQANTI3 quality attributes of an isoform (column names lower-cased; FL → full_length_reads). */
export interface SqantiQc {
  subcategory: string | null;
  fsm_class: string | null;
  all_canonical: boolean | null;
  rts_stage: boolean | null;
  diff_to_tss: number | null;
  diff_to_tts: number | null;
  within_cage_peak: boolean | null;
  dist_to_cage_peak: number | null;
  polya_motif: string | null;
  polya_motif_found: boolean | null;
  polya_dist: number | null;
  full_length_reads: number | null;
}

/** `ENSG00000100320.23` → `ENSG00000100320`; keeps GENCODE's `_PAR_Y` suffix, which is part of the id. */
export function unversioned(id: string): string {
  return id.replace(/\.\d+(_PAR_Y)?$/, '$1');
}

/** One collator for every comparison: `localeCompare` with a locale or options builds a collator per
 * call, and a long-read import merges millions of ids. The order is the same: ECMA-402 defines that
 * `localeCompare` as the compare of a collator made with its locale and options. */
const NATURAL = new Intl.Collator('en', { numeric: true });

/** Natural order for ids such as PB.12.3 < PB.12.10 < PB.100.1. */
export const compareNatural: (a: string, b: string) => number = NATURAL.compare;
