// The CDS a reference annotation states for a transcript, beside the ORF SQANTI3 predicted: from a
// genePred-extended file when the release names one, else from the GTF's CDS, start_codon and
// stop_codon features.
import type { GenePredTranscript } from './gene-pred.js';
import type { GtfTranscript } from './gtf.js';
import { InputError } from './input.js';
import type { CdsEndStatus, ReferenceCds } from '../release-db/records.js';

/** GENCODE marks an end its CDS does not reach with cds_start_NF / cds_end_NF and writes a
 * start_codon / stop_codon feature where the codon is annotated. */
function gtfEndStatus(t: GtfTranscript, notFoundTag: string, codon: boolean): CdsEndStatus {
  if (t.tags.includes(notFoundTag)) return 'incomplete';
  return codon ? 'complete' : 'unknown';
}

/** The GTF's CDS features plus its stop_codon feature (GENCODE's CDS features exclude the stop codon). */
export function referenceCdsFromGtf(t: GtfTranscript): ReferenceCds | null {
  if (!t.cds) return null;
  return {
    start: t.cds.start,
    end: t.cds.end,
    start_status: gtfEndStatus(t, 'cds_start_NF', t.cds.startCodon),
    end_status: gtfEndStatus(t, 'cds_end_NF', t.cds.stopCodon),
    source: 'gtf',
  };
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
