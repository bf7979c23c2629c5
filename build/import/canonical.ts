// The canonical isoform of a gene, the reference point of Δlength. Rule, in order:
//   1. the reference isoform tagged MANE_Select;
//   2. else the one tagged Ensembl_canonical;
//   3. else the reference isoform with the longest complete annotated CDS (its reference_cds has both
//      a start and a stop codon; length on the exons, then transcript length, id): the annotation's
//      own protein, whether or not the ORF prediction agrees with it;
//   4. else the longest coding reference isoform, complete ORFs first (a complete ORF before a longer
//      partial one: a partial ORF's length is not its protein's; then protein length, transcript
//      length, id);
//   5. else (a non-coding gene) the longest reference transcript (length, then id).
// Long-read isoforms are never canonical: canonical means the reference annotation's choice.
import type { IsoformRecord, ReferenceCds } from '../release-db/records.js';

/** What the rule reads of an isoform. */
export type CanonicalCandidate = Pick<
  IsoformRecord,
  'transcript_id' | 'source' | 'tags' | 'reference_cds' | 'exons' | 'coding' | 'protein_length' | 'length'
> & { orf: { completeness: string } | null };

export type CanonicalRule =
  | 'MANE_Select'
  | 'Ensembl_canonical'
  | 'longest_annotated_cds'
  | 'longest_coding'
  | 'longest_transcript';

/** Nucleotides of the annotated CDS on the transcript's exons. */
function cdsLengthOnExons(iso: CanonicalCandidate, cds: ReferenceCds): number {
  let n = 0;
  for (const [start, end] of iso.exons) n += Math.max(0, Math.min(end, cds.end) - Math.max(start, cds.start) + 1);
  return n;
}

export function chooseCanonical(isoforms: CanonicalCandidate[]): { transcriptId: string; rule: CanonicalRule } | null {
  const reference = isoforms.filter((i) => i.source === 'reference');
  if (reference.length === 0) return null;
  const byId = (a: CanonicalCandidate, b: CanonicalCandidate) => (a.transcript_id < b.transcript_id ? -1 : 1);
  for (const tag of ['MANE_Select', 'Ensembl_canonical'] as const) {
    const tagged = reference.filter((i) => i.tags.includes(tag)).sort(byId);
    if (tagged.length) return { transcriptId: tagged[0].transcript_id, rule: tag };
  }
  const annotated = reference
    .filter((i) => i.reference_cds?.start_status === 'complete' && i.reference_cds.end_status === 'complete')
    .map((i) => ({ iso: i, cds: cdsLengthOnExons(i, i.reference_cds!) }));
  if (annotated.length) {
    annotated.sort((a, b) => b.cds - a.cds || b.iso.length - a.iso.length || byId(a.iso, b.iso));
    return { transcriptId: annotated[0].iso.transcript_id, rule: 'longest_annotated_cds' };
  }
  const coding = reference.filter((i) => i.coding && i.protein_length !== null);
  if (coding.length) {
    const partial = (i: CanonicalCandidate) => (i.orf !== null && i.orf.completeness !== 'complete' ? 1 : 0);
    coding.sort(
      (a, b) => partial(a) - partial(b) || b.protein_length! - a.protein_length! || b.length - a.length || byId(a, b),
    );
    return { transcriptId: coding[0].transcript_id, rule: 'longest_coding' };
  }
  const longest = [...reference].sort((a, b) => b.length - a.length || byId(a, b));
  return { transcriptId: longest[0].transcript_id, rule: 'longest_transcript' };
}
