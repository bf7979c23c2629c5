// The canonical isoform of a gene, the reference point of Δlength. Rule, in order:
//   1. the reference isoform tagged MANE_Select;
//   2. else the one tagged Ensembl_canonical;
//   3. else the longest coding reference isoform, complete ORFs first (a complete ORF before a longer
//      partial one: a partial ORF's length is not its protein's; then protein length, transcript
//      length, id);
//   4. else (a non-coding gene) the longest reference transcript (length, then id).
// Long-read isoforms are never canonical: canonical means the reference annotation's choice.
import type { IsoformRecord } from '../release-db/records.js';

export type CanonicalRule = 'MANE_Select' | 'Ensembl_canonical' | 'longest_coding' | 'longest_transcript';

export function chooseCanonical(isoforms: IsoformRecord[]): { transcriptId: string; rule: CanonicalRule } | null {
  const reference = isoforms.filter((i) => i.source === 'reference');
  if (reference.length === 0) return null;
  const byId = (a: IsoformRecord, b: IsoformRecord) => (a.transcript_id < b.transcript_id ? -1 : 1);
  for (const tag of ['MANE_Select', 'Ensembl_canonical'] as const) {
    const tagged = reference.filter((i) => i.tags.includes(tag)).sort(byId);
    if (tagged.length) return { transcriptId: tagged[0].transcript_id, rule: tag };
  }
  const coding = reference.filter((i) => i.coding && i.protein_length !== null);
  if (coding.length) {
    const partial = (i: IsoformRecord) => (i.orf !== null && i.orf.completeness !== 'complete' ? 1 : 0);
    coding.sort(
      (a, b) => partial(a) - partial(b) || b.protein_length! - a.protein_length! || b.length - a.length || byId(a, b),
    );
    return { transcriptId: coding[0].transcript_id, rule: 'longest_coding' };
  }
  const longest = [...reference].sort((a, b) => b.length - a.length || byId(a, b));
  return { transcriptId: longest[0].transcript_id, rule: 'longest_transcript' };
}
