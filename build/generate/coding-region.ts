// Where a generated transcript's coding region lies, in the shapes a real release states it: GENCODE's
// GTF features (CDS without the stop codon, start_codon, stop_codon, each split at exon boundaries,
// with its phase) and SQANTI3's classification columns (CDS_start/CDS_end on the transcript,
// CDS_genomic_start/CDS_genomic_end at its 5′ and 3′ ends, stop included). One computation feeds
// both, so the generated annotation and the generated prediction agree.

export interface CodingRegion {
  /** On the transcript, 1-based from its 5′ end, stop codon included. */
  transcriptStart: number;
  transcriptEnd: number;
  /** Genomic positions of the 5′ and 3′ ends (so start > end on the minus strand), as SQANTI3 writes them. */
  genomicStart: number;
  genomicEnd: number;
  /** GTF features in transcript order: [feature, start, end, phase], start <= end. */
  features: [feature: 'CDS' | 'start_codon' | 'stop_codon', start: number, end: number, phase: number][];
}

type Segment = [start: number, end: number];

/** Genomic segments of transcript positions from..to (1-based, inclusive), in transcript order, each
 * with how many bases of the range come before it. `exons` are in transcript order. */
function segments(exons: readonly Segment[], strand: '+' | '-', from: number, to: number): [Segment, number][] {
  const out: [Segment, number][] = [];
  let before = 0; // transcript bases in earlier exons
  for (const [s, e] of exons) {
    const length = e - s + 1;
    const lo = Math.max(from, before + 1);
    const hi = Math.min(to, before + length);
    if (lo <= hi) {
      const a = lo - before - 1; // offsets into the exon from its 5′ end
      const b = hi - before - 1;
      out.push([strand === '+' ? [s + a, s + b] : [e - b, e - a], lo - from]);
    }
    before += length;
  }
  return out;
}

/** The coding region of a protein of `proteinLength` residues plus a stop codon, starting `utr5`
 * bases into the transcript. `exons` are in transcript order (5′ to 3′). */
export function codingRegion(
  exons: readonly Segment[],
  strand: '+' | '-',
  utr5: number,
  proteinLength: number,
): CodingRegion {
  const transcriptStart = utr5 + 1;
  const stopStart = utr5 + 3 * proteinLength + 1;
  const transcriptEnd = stopStart + 2;
  const features: CodingRegion['features'] = [];
  const add = (feature: 'CDS' | 'start_codon' | 'stop_codon', from: number, to: number) => {
    for (const [[s, e], offset] of segments(exons, strand, from, to))
      features.push([feature, s, e, (3 - (offset % 3)) % 3]);
  };
  add('CDS', transcriptStart, stopStart - 1);
  add('start_codon', transcriptStart, transcriptStart + 2);
  add('stop_codon', stopStart, transcriptEnd);
  const genomic = (pos: number) => {
    const [s, e] = segments(exons, strand, pos, pos)[0]![0];
    return strand === '+' ? s : e;
  };
  return {
    transcriptStart,
    transcriptEnd,
    genomicStart: genomic(transcriptStart),
    genomicEnd: genomic(transcriptEnd),
    features,
  };
}
