// UCSC genePred-extended reader (tab-separated, no header: name, chrom, strand, txStart, txEnd,
// cdsStart, cdsEnd, exonCount, exonStarts, exonEnds, score, name2, cdsStartStat, cdsEndStat,
// exonFrames; 0-based half-open). Only what the atlas takes from it is kept: each transcript's
// annotated CDS, the stop codon included, and how complete each of its ends is.
import { InputError, readLines } from './input.js';
import type { CdsEndStatus, ReferenceCds } from '../release-db/records.js';

export interface GenePredTranscript {
  chromosome: string;
  strand: '+' | '-';
  /** null where cdsStart = cdsEnd: the annotation states no CDS. */
  cds: ReferenceCds | null;
  line: number;
}

const STATUS: Record<string, CdsEndStatus | 'none'> = {
  cmpl: 'complete',
  incmpl: 'incomplete',
  unk: 'unknown',
  none: 'none',
};

/** Reads a whole genePred into memory (for tools and tests; the core import stages it). */
export async function readGenePred(path: string): Promise<Map<string, GenePredTranscript>> {
  const out = new Map<string, GenePredTranscript>();
  for await (const entry of genePredEntries(path, (name) => out.get(name)?.line ?? null)) out.set(entry.name, entry);
  return out;
}

/** The transcripts of a genePred one at a time, each checked as it is read. `firstLine` says where a
 * transcript was already read (null where it was not): a second line of it is an error. */
export async function* genePredEntries(
  path: string,
  firstLine: (name: string) => number | null,
): AsyncGenerator<GenePredTranscript & { name: string }> {
  for await (const [line, text] of readLines(path)) {
    if (text.trim() === '' || text.startsWith('#')) continue;
    const f = text.split('\t');
    if (f.length < 15)
      throw new InputError(
        path,
        line,
        `${f.length} columns, genePred-extended has 15: is this a genePred-extended file?`,
      );
    const [name, chromosome, strand] = f;
    if (strand !== '+' && strand !== '-') throw new InputError(path, line, `strand "${strand}" is not + or -`);
    const cdsStart = Number(f[5]);
    const cdsEnd = Number(f[6]);
    if (!Number.isInteger(cdsStart) || !Number.isInteger(cdsEnd) || cdsEnd < cdsStart)
      throw new InputError(path, line, `cdsStart ${f[5]} and cdsEnd ${f[6]} are not a range`);
    const startStat = STATUS[f[12]];
    const endStat = STATUS[f[13]];
    if (!startStat || !endStat)
      throw new InputError(
        path,
        line,
        `cdsStartStat "${f[12]}" / cdsEndStat "${f[13]}": expected none, unk, incmpl or cmpl`,
      );
    const first = firstLine(name);
    if (first !== null) throw new InputError(path, line, `transcript ${name} appears twice (first at line ${first})`);
    let cds: ReferenceCds | null = null;
    if (cdsEnd > cdsStart) {
      if (startStat === 'none' || endStat === 'none')
        throw new InputError(path, line, `transcript ${name} has a CDS but its status is "none"`);
      // cdsStartStat and cdsEndStat describe the genomic left and right ends: on the minus strand the
      // left end is the stop codon's.
      const [fivePrime, threePrime] = strand === '+' ? [startStat, endStat] : [endStat, startStat];
      cds = { start: cdsStart + 1, end: cdsEnd, start_status: fivePrime, end_status: threePrime, source: 'genepred' };
    }
    yield { name, chromosome, strand, cds, line };
  }
}
