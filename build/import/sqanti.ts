// SQANTI3 classification reader (reference or long-read run). SQANTI3 writes ~48 columns; we read the
// ones the atlas uses by name and ignore the rest, so newer SQANTI3 versions with extra columns work.
import { InputError, cellParsers, readTsv } from './input.js';
import type { SqantiQc } from '../release-db/records.js';

export interface SqantiRow {
  isoform: string;
  chromosome: string;
  strand: '+' | '-';
  length: number;
  exons: number;
  structuralCategory: string;
  associatedGene: string;
  associatedTranscript: string | null;
  coding: boolean;
  /** SQANTI3's ORF_length counts the stop codon when the ORF has one. */
  orfLength: number | null;
  orfSequence: string | null;
  /** The ORF on the transcript (CDS_start–CDS_end, 1-based, stop codon included when there is one)
   * and its genomic ends as SQANTI3 gives them (5′ end first, so start > end on the minus strand). */
  cds: { transcriptStart: number; transcriptEnd: number; genomicStart: number; genomicEnd: number } | null;
  predictedNmd: boolean | null;
  isoExp: number | null;
  /** Quality attributes; null when the file has none of their columns. */
  qc: SqantiQc | null;
  line: number;
}

const REQUIRED = [
  'isoform',
  'chrom',
  'strand',
  'length',
  'exons',
  'structural_category',
  'associated_gene',
  'associated_transcript',
  'coding',
  'ORF_length',
  'predicted_NMD',
] as const;

/** Columns the generator writes too (build/generate/human.ts), so the two cannot drift. */
export const CDS_COLUMNS = ['CDS_start', 'CDS_end', 'CDS_genomic_start', 'CDS_genomic_end'] as const;
export const QC_COLUMNS = [
  'subcategory',
  'FSM_class',
  'all_canonical',
  'RTS_stage',
  'diff_to_TSS',
  'diff_to_TTS',
  'within_CAGE_peak',
  'dist_to_CAGE_peak',
  'polyA_motif',
  'polyA_motif_found',
  'polyA_dist',
  'FL',
] as const;

/** Reads a whole classification into memory (for tools and tests; the core import stages it). */
export async function readSqantiClassification(path: string): Promise<Map<string, SqantiRow>> {
  const rows = new Map<string, SqantiRow>();
  const firstLine = (isoform: string) => rows.get(isoform)?.line ?? null;
  for await (const row of sqantiRows(path, firstLine)) rows.set(row.isoform, row);
  return rows;
}

/** The rows of a classification one at a time, each checked as it is read. `firstLine` says where an
 * isoform was already read (null where it was not): a second row of it is an error. */
export async function* sqantiRows(
  path: string,
  firstLine: (isoform: string) => number | null,
): AsyncGenerator<SqantiRow> {
  for await (const { line, row } of readTsv(path, { required: REQUIRED })) {
    const p = cellParsers(path, line);
    const isoform = p.text('isoform', row.isoform)!;
    const previous = firstLine(isoform);
    if (previous !== null)
      throw new InputError(path, line, `duplicate isoform ${isoform} (first at line ${previous})`, 'isoform');
    if (row.strand !== '+' && row.strand !== '-') p.fail('strand', `expected + or -, found "${row.strand}"`);
    if (row.coding !== 'coding' && row.coding !== 'non_coding')
      p.fail('coding', `expected coding or non_coding, found "${row.coding}"`);
    const nmd = row.predicted_NMD;
    if (!['TRUE', 'FALSE', 'NA', ''].includes(nmd))
      p.fail('predicted_NMD', `expected TRUE, FALSE or NA, found "${nmd}"`);
    const coding = row.coding === 'coding';
    // Optional columns (SQANTI3 writes them; a minimal classification may not): a missing column reads as NA.
    const cell = (column: string) => row[column] ?? 'NA';
    const flag = (column: string, yes = 'TRUE', no = 'FALSE'): boolean | null => {
      const v = cell(column);
      if (v === yes) return true;
      if (v === no) return false;
      if (p.isNull(v)) return null;
      return p.fail(column, `expected ${yes}, ${no} or NA, found "${v}"`);
    };
    const cds =
      coding && CDS_COLUMNS.every((c) => c in row && !p.isNull(row[c]))
        ? {
            transcriptStart: p.int('CDS_start', row.CDS_start, { min: 1 })!,
            transcriptEnd: p.int('CDS_end', row.CDS_end, { min: 1 })!,
            genomicStart: p.int('CDS_genomic_start', row.CDS_genomic_start, { min: 1 })!,
            genomicEnd: p.int('CDS_genomic_end', row.CDS_genomic_end, { min: 1 })!,
          }
        : null;
    if (cds && cds.transcriptEnd < cds.transcriptStart)
      p.fail('CDS_end', `CDS_end ${cds.transcriptEnd} is before CDS_start ${cds.transcriptStart}`);
    const qc: SqantiQc | null = QC_COLUMNS.some((c) => c in row)
      ? {
          subcategory: p.text('subcategory', cell('subcategory'), { nullable: true }),
          fsm_class: p.text('FSM_class', cell('FSM_class'), { nullable: true }),
          all_canonical: flag('all_canonical', 'canonical', 'non_canonical'),
          rts_stage: flag('RTS_stage'),
          diff_to_tss: p.int('diff_to_TSS', cell('diff_to_TSS'), { nullable: true }),
          diff_to_tts: p.int('diff_to_TTS', cell('diff_to_TTS'), { nullable: true }),
          within_cage_peak: flag('within_CAGE_peak'),
          dist_to_cage_peak: p.int('dist_to_CAGE_peak', cell('dist_to_CAGE_peak'), { nullable: true }),
          polya_motif: p.text('polyA_motif', cell('polyA_motif'), { nullable: true }),
          polya_motif_found: flag('polyA_motif_found'),
          polya_dist: p.int('polyA_dist', cell('polyA_dist'), { nullable: true }),
          full_length_reads: p.int('FL', cell('FL'), { min: 0, nullable: true }),
        }
      : null;
    yield {
      isoform,
      chromosome: p.text('chrom', row.chrom)!,
      strand: row.strand as '+' | '-',
      length: p.int('length', row.length, { min: 1 })!,
      exons: p.int('exons', row.exons, { min: 1 })!,
      structuralCategory: p.text('structural_category', row.structural_category)!,
      associatedGene: p.text('associated_gene', row.associated_gene)!,
      associatedTranscript:
        row.associated_transcript === 'novel'
          ? null
          : p.text('associated_transcript', row.associated_transcript, { nullable: true }),
      coding,
      orfLength: coding ? p.int('ORF_length', row.ORF_length, { min: 1 }) : null,
      orfSequence: coding && 'ORF_seq' in row ? p.text('ORF_seq', row.ORF_seq, { nullable: true }) : null,
      cds,
      predictedNmd: nmd === 'TRUE' ? true : nmd === 'FALSE' ? false : null,
      isoExp: 'iso_exp' in row ? p.num('iso_exp', row.iso_exp, { min: 0, nullable: true }) : null,
      qc,
      line,
    };
  }
}
