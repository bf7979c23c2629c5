// SQANTI3 classification reader (reference or long-read run). SQANTI3 writes ~48 columns; we read the
// ones the atlas uses by name and ignore the rest, so newer SQANTI3 versions with extra columns work.
import { InputError, cellParsers, readTsv } from './input.js';

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
  predictedNmd: boolean | null;
  isoExp: number | null;
  line: number;
}

const REQUIRED = [
  'isoform', 'chrom', 'strand', 'length', 'exons', 'structural_category', 'associated_gene',
  'associated_transcript', 'coding', 'ORF_length', 'predicted_NMD',
] as const;

export async function readSqantiClassification(path: string): Promise<Map<string, SqantiRow>> {
  const rows = new Map<string, SqantiRow>();
  for await (const { line, row } of readTsv(path, { required: REQUIRED })) {
    const p = cellParsers(path, line);
    const isoform = p.text('isoform', row.isoform)!;
    const previous = rows.get(isoform);
    if (previous) throw new InputError(path, line, `duplicate isoform ${isoform} (first at line ${previous.line})`, 'isoform');
    if (row.strand !== '+' && row.strand !== '-') p.fail('strand', `expected + or -, found "${row.strand}"`);
    if (row.coding !== 'coding' && row.coding !== 'non_coding') p.fail('coding', `expected coding or non_coding, found "${row.coding}"`);
    const nmd = row.predicted_NMD;
    if (!['TRUE', 'FALSE', 'NA', ''].includes(nmd)) p.fail('predicted_NMD', `expected TRUE, FALSE or NA, found "${nmd}"`);
    const coding = row.coding === 'coding';
    rows.set(isoform, {
      isoform,
      chromosome: p.text('chrom', row.chrom)!,
      strand: row.strand as '+' | '-',
      length: p.int('length', row.length, { min: 1 })!,
      exons: p.int('exons', row.exons, { min: 1 })!,
      structuralCategory: p.text('structural_category', row.structural_category)!,
      associatedGene: p.text('associated_gene', row.associated_gene)!,
      associatedTranscript: row.associated_transcript === 'novel' ? null : p.text('associated_transcript', row.associated_transcript, { nullable: true }),
      coding,
      orfLength: coding ? p.int('ORF_length', row.ORF_length, { min: 1 }) : null,
      orfSequence: coding && 'ORF_seq' in row ? p.text('ORF_seq', row.ORF_seq, { nullable: true }) : null,
      predictedNmd: nmd === 'TRUE' ? true : nmd === 'FALSE' ? false : null,
      isoExp: 'iso_exp' in row ? p.num('iso_exp', row.iso_exp, { min: 0, nullable: true }) : null,
      line,
    });
  }
  return rows;
}
