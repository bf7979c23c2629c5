// The open reading frame of a coding isoform: where it lies on the genome and on the transcript, and
// whether it is complete. From SQANTI3's classification (CDS_start/CDS_end on the transcript, checked
// against its genomic ends through the exons) or, without one, from the GTF's CDS, start_codon and
// stop_codon features and its cds_start_NF / cds_end_NF tags.
import type { GtfTranscript } from './gtf.js';
import { InputError } from './input.js';
import { gtfCdsEnds } from './reference-cds.js';
import type { SqantiRow } from './sqanti.js';
import type { OrfCompleteness, OrfRecord } from '../release-db/records.js';

/** Position `pos` (1-based from the transcript's 5′ end) on the genome; null outside the exons.
 * `exons` are in transcript order, as GtfTranscript keeps them. */
export function transcriptToGenome(exons: readonly [number, number][], strand: '+' | '-', pos: number): number | null {
  if (pos < 1) return null;
  let left = pos;
  for (const [start, end] of exons) {
    const length = end - start + 1;
    if (left <= length) return strand === '+' ? start + left - 1 : end - left + 1;
    left -= length;
  }
  return null;
}

/** Genomic position `g` as a position on the transcript (1-based from its 5′ end); null in an intron
 * or outside the transcript. */
export function genomeToTranscript(exons: readonly [number, number][], strand: '+' | '-', g: number): number | null {
  let before = 0;
  for (const [start, end] of exons) {
    if (g >= start && g <= end) return before + (strand === '+' ? g - start : end - g) + 1;
    before += end - start + 1;
  }
  return null;
}

export function orfCompleteness(hasStart: boolean, hasStop: boolean): OrfCompleteness {
  if (hasStart && hasStop) return 'complete';
  if (hasStop) return '5prime_partial';
  if (hasStart) return '3prime_partial';
  return 'internal';
}

/** The ORF SQANTI3 predicted. Its transcript bounds must land on its genomic ends: a classification
 * that disagrees with its own GTF is refused rather than served wrong. */
export function orfFromSqanti(
  t: GtfTranscript,
  row: SqantiRow,
  file: string,
  protein: { sequence: string | null; stop: boolean | null },
): OrfRecord | null {
  if (!row.cds) return null;
  const { transcriptStart, transcriptEnd, genomicStart, genomicEnd } = row.cds;
  const from = transcriptToGenome(t.exons, t.strand, transcriptStart);
  const to = transcriptToGenome(t.exons, t.strand, transcriptEnd);
  if (from !== genomicStart || to !== genomicEnd) {
    throw new InputError(
      file,
      row.line,
      `the ORF of ${row.isoform} (CDS_start ${transcriptStart}, CDS_end ${transcriptEnd}) maps to ${from ?? 'outside the exons'}–${to ?? 'outside the exons'} through the GTF's exons, not to CDS_genomic_start ${genomicStart}–CDS_genomic_end ${genomicEnd}: are the classification and the GTF from the same SQANTI3 run?`,
      'CDS_start',
    );
  }
  const hasStop = row.orfSequence !== null ? row.orfSequence.endsWith('*') : (protein.stop ?? false);
  const hasStart = (protein.sequence ?? row.orfSequence ?? '').startsWith('M');
  return {
    start: Math.min(genomicStart, genomicEnd),
    end: Math.max(genomicStart, genomicEnd),
    transcript_start: transcriptStart,
    transcript_end: transcriptEnd,
    completeness: orfCompleteness(hasStart, hasStop),
    source: 'sqanti3',
  };
}

/** The ORF the GTF annotates: its CDS features plus the stop codon feature. Its ends are the reference
 * CDS's (gtfCdsEnds): a start or a stop only where the GTF annotates the codon and no _NF tag denies it;
 * a protein sequence, where there is one, must also begin with M for a start. */
export function orfFromGtf(t: GtfTranscript, sequence: string | null): OrfRecord | null {
  if (!t.cds) return null;
  const fivePrime = t.strand === '+' ? t.cds.start : t.cds.end;
  const threePrime = t.strand === '+' ? t.cds.end : t.cds.start;
  const transcriptStart = genomeToTranscript(t.exons, t.strand, fivePrime);
  const transcriptEnd = genomeToTranscript(t.exons, t.strand, threePrime);
  // A CDS outside the exons happens where a region-clipped GTF cut the transcript: no ORF to state.
  if (transcriptStart === null || transcriptEnd === null) return null;
  const ends = gtfCdsEnds(t);
  const hasStart = ends.start === 'complete' && (sequence === null || sequence.startsWith('M'));
  const hasStop = ends.stop === 'complete';
  return {
    start: t.cds.start,
    end: t.cds.end,
    transcript_start: transcriptStart,
    transcript_end: transcriptEnd,
    completeness: orfCompleteness(hasStart, hasStop),
    source: 'gtf',
  };
}
