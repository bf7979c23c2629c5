// A predicted ORF held against the CDS the reference annotates for the same transcript. Both spans
// include the stop codon and lie on the same exons, so equal genomic ends mean the same nucleotides in
// the same frame: the annotated protein.
import type { OrfRecord, ReferenceCds } from '../release-db/records.js';

export interface OrfVsReference {
  matches_reference: boolean | null;
  start_vs_reference: 'same' | 'upstream' | 'downstream' | null;
  stop_vs_reference: 'same' | 'early' | 'late' | null;
}

export function compareWithReference(
  orf: Pick<OrfRecord, 'start' | 'end'>,
  cds: Pick<ReferenceCds, 'start' | 'end'> | null,
  strand: '+' | '-',
): OrfVsReference {
  if (!cds) return { matches_reference: null, start_vs_reference: null, stop_vs_reference: null };
  // Ends in transcript order, as signed positions that grow 5′ to 3′ on either strand.
  const along = (g: number) => (strand === '+' ? g : -g);
  const [orf5, orf3] = strand === '+' ? [orf.start, orf.end] : [orf.end, orf.start];
  const [cds5, cds3] = strand === '+' ? [cds.start, cds.end] : [cds.end, cds.start];
  const start = along(orf5) - along(cds5);
  const stop = along(orf3) - along(cds3);
  return {
    matches_reference: start === 0 && stop === 0,
    start_vs_reference: start === 0 ? 'same' : start < 0 ? 'upstream' : 'downstream',
    stop_vs_reference: stop === 0 ? 'same' : stop < 0 ? 'early' : 'late',
  };
}
