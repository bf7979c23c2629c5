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
  canonical_rule: 'MANE_Select' | 'Ensembl_canonical' | 'longest_coding' | 'longest_transcript' | null;
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
  tags: string[];
}

/** `ENSG00000100320.23` → `ENSG00000100320`; keeps GENCODE's `_PAR_Y` suffix, which is part of the id. */
export function unversioned(id: string): string {
  return id.replace(/\.\d+(_PAR_Y)?$/, '$1');
}

/** Natural order for ids such as PB.12.3 < PB.12.10 < PB.100.1. */
export function compareNatural(a: string, b: string): number {
  return a.localeCompare(b, 'en', { numeric: true });
}
