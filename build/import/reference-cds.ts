// The CDS a reference annotation states for a transcript, beside the ORF SQANTI3 predicted: from a
// genePred-extended file when the release names one, else from the GTF's CDS, start_codon and
// stop_codon features.
import type { GenePredTranscript } from './gene-pred.js';
import type { GtfTranscript } from './gtf.js';
import { InputError } from './input.js';
import type { CdsEndStatus, ReferenceCds } from '../release-db/records.js';

/** What a GTF says of the two ends of a transcript's CDS, by one rule at both ends (GENCODE's
 * definitions): the cds_start_NF / cds_end_NF tag ("the coding region start / end could not be
 * confirmed") makes the end `incomplete`, whatever features there are; else a whole start_codon /
 * stop_codon feature makes it `complete`; else nothing says, as where a region-clipped subset lost the
 * codon: `unknown`, never `complete`. The ORF read from the GTF (orf.ts) takes its ends from this too. */
export function gtfCdsEnds(t: GtfTranscript): { start: CdsEndStatus; stop: CdsEndStatus } {
  const status = (notFoundTag: string, codon: boolean): CdsEndStatus =>
    t.tags.includes(notFoundTag) ? 'incomplete' : codon ? 'complete' : 'unknown';
  return {
    start: status('cds_start_NF', t.cds?.startCodon ?? false),
    stop: status('cds_end_NF', t.cds?.stopCodon ?? false),
  };
}

/** The GTF's CDS features plus its stop_codon feature (GENCODE's CDS features exclude the stop codon);
 * null without CDS features. */
export function referenceCdsFromGtf(t: GtfTranscript): ReferenceCds | null {
  if (!t.cds) return null;
  const ends = gtfCdsEnds(t);
  return { start: t.cds.start, end: t.cds.end, start_status: ends.start, end_status: ends.stop, source: 'gtf' };
}

/** The genePred's CDS of transcript `t`, which must be in it on the same chromosome and strand: a
 * transcript missing from the genePred would otherwise read as one without a CDS. */
export function referenceCdsFromGenePred(
  t: GtfTranscript,
  genePred: { file: string; transcripts: Map<string, GenePredTranscript> },
): ReferenceCds | null {
  const entry = genePred.transcripts.get(t.transcriptId);
  if (!entry) throw new InputError(genePred.file, null, `transcript ${t.transcriptId} of the GTF is not in it`);
  if (entry.chromosome !== t.chromosome || entry.strand !== t.strand) {
    throw new InputError(
      genePred.file,
      entry.line,
      `transcript ${t.transcriptId} is on ${entry.chromosome} ${entry.strand} here and on ${t.chromosome} ${t.strand} in the GTF`,
    );
  }
  return entry.cds;
}
