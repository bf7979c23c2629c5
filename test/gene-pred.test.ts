// The annotated CDS, read from a genePred-extended file and from a GENCODE GTF's CDS, start_codon and
// stop_codon features, on the shipped files: both give the same bounds where both have a transcript.
import { describe, expect, it } from 'vitest';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGenePred } from '../build/import/gene-pred.js';
import { readGtf } from '../build/import/gtf.js';
import { orfFromGtf } from '../build/import/orf.js';
import { InputError } from '../build/import/input.js';
import { referenceCdsFromGenePred, referenceCdsFromGtf } from '../build/import/reference-cds.js';

const GENE_PRED = join(__dirname, '../data/chr22/refAnnotation_gencode.v38.basic_chr22.genePred.gz');
const V49 = join(__dirname, '../data/gencode-v49/gencode.v49.tusco_subset.gtf.gz');

describe('genePred-extended reader', () => {
  it('reads GENCODE v38 basic chr22: 2,428 transcripts, 1,354 with a CDS, statuses by 5′ and 3′ end', async () => {
    const transcripts = await readGenePred(GENE_PRED);
    expect(transcripts.size).toBe(2428);
    const withCds = [...transcripts.values()].filter((t) => t.cds);
    expect(withCds).toHaveLength(1354);
    const statuses = new Map<string, number>();
    for (const t of withCds) {
      const key = `${t.cds!.start_status}/${t.cds!.end_status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    // cut -f3,13,14, with cdsStartStat and cdsEndStat swapped on the minus strand.
    expect(Object.fromEntries(statuses)).toEqual({
      'complete/complete': 1294,
      'complete/incomplete': 41,
      'incomplete/complete': 13,
      'incomplete/incomplete': 6,
    });
    // 0-based half-open cdsStart 19877104, cdsEnd 19941803 → 1-based inclusive.
    expect(transcripts.get('ENST00000400521.7')).toMatchObject({
      chromosome: 'chr22',
      strand: '-',
      cds: { start: 19877105, end: 19941803, start_status: 'complete', end_status: 'complete', source: 'genepred' },
    });
    expect(transcripts.get('ENST00000615943.1')!.cds).toBeNull();
  });

  it('a minus-strand transcript with an incomplete left end has an incomplete stop, not start', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-genepred-'));
    try {
      const file = join(dir, 'x.genePred');
      const row = (strand: string) =>
        ['T1', 'chr1', strand, '0', '100', '10', '91', '1', '0,', '100,', '0', 'G1', 'incmpl', 'cmpl', '0,'].join('\t');
      writeFileSync(file, `${row('-')}\n`);
      expect((await readGenePred(file)).get('T1')!.cds).toMatchObject({
        start: 11,
        end: 91,
        start_status: 'complete',
        end_status: 'incomplete',
      });
      writeFileSync(file, `${row('+')}\n`);
      expect((await readGenePred(file)).get('T1')!.cds).toMatchObject({
        start_status: 'incomplete',
        end_status: 'complete',
      });
      writeFileSync(file, `${row('+').split('\t').slice(0, 12).join('\t')}\n`);
      await expect(readGenePred(file)).rejects.toThrow(InputError);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the GTF reader gives the same CDS as the genePred for RTL6-201, in GENCODE v49 and v38', async () => {
    const [genePred, v49] = await Promise.all([readGenePred(GENE_PRED), readGtf(V49)]);
    // The v49 subset's sequence names are regions: chr22:44442583-… puts its position 1 at 44442583.
    const t = v49.transcripts.get('ENST00000341255.4')!;
    expect(t.chromosome).toBe('chr22:44442583-44548233');
    const fromGtf = referenceCdsFromGtf(t)!;
    const fromGenePred = genePred.get('ENST00000341255.4')!.cds!;
    const offset = 44442583 - 1;
    expect({ ...fromGtf, start: fromGtf.start + offset, end: fromGtf.end + offset, source: 'genepred' }).toEqual(
      fromGenePred,
    );
    // The CDS features end at 54258; the stop_codon feature adds 54255–54257.
    expect(fromGtf).toMatchObject({ start: 54255, end: 54974, start_status: 'complete', end_status: 'complete' });
  });

  it('refuses a genePred that lacks a GTF transcript or puts it on another strand, rather than calling it non-coding', async () => {
    const [genePred, v49] = await Promise.all([readGenePred(GENE_PRED), readGtf(V49)]);
    const rtl6 = v49.transcripts.get('ENST00000341255.4')!;
    const file = { file: 'x.genePred', transcripts: genePred };
    // The v49 region name is not chr22: the same transcript on another sequence is refused.
    expect(() => referenceCdsFromGenePred(rtl6, file)).toThrow(/on chr22 - here and on chr22:44442583-44548233 -/);
    const sdf4 = v49.transcripts.get('ENST00000900949.1')!;
    expect(() => referenceCdsFromGenePred(sdf4, file)).toThrow(/ENST00000900949.1 of the GTF is not in it/);
  });

  it('the GTF reader counts a codon only when its lines cover 3 nt and no _NF tag denies it, and a CDS only with CDS lines', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-gtf-codons-'));
    try {
      const file = join(dir, 'x.gtf');
      const line = (feature: string, start: number, end: number, phase = '.', more = '') =>
        ['chr1', 'test', feature, start, end, '.', '-', phase, `gene_id "G1"; transcript_id "T1";${more}`].join('\t');
      let tags = '';
      const transcript = async (...features: string[]) => {
        const head = [line('transcript', 1, 300, '.', tags), line('exon', 1, 100), line('exon', 201, 300)];
        writeFileSync(file, `${[...head, ...features].join('\n')}\n`);
        return (await readGtf(file)).transcripts.get('T1')!;
      };
      const cds = (start: number, end: number, startCodon: boolean, stopCodon: boolean, phase: number) => ({
        start,
        end,
        startCodon,
        stopCodon,
        phase,
      });
      // Minus strand: the 5′-most CDS line is the rightmost, and its phase (2) sets the frame.
      const framed = await transcript(
        line('CDS', 211, 250, '2'),
        line('CDS', 62, 100, '1'),
        line('stop_codon', 59, 61),
      );
      expect(framed.cds).toEqual(cds(59, 250, false, true, 2));
      // A start codon, and a stop codon split 2 + 1 by the intron: both whole.
      const codingLines = [line('CDS', 203, 250, '0'), line('start_codon', 248, 250)];
      const split = await transcript(...codingLines, line('stop_codon', 201, 202), line('stop_codon', 100, 100));
      expect(split.cds).toEqual(cds(100, 250, true, true, 0));
      // One base of a stop codon, as a region clip leaves it, is no stop codon and no part of the CDS.
      expect((await transcript(...codingLines, line('stop_codon', 100, 100))).cds).toEqual(
        cds(203, 250, true, false, 0),
      );
      // An _NF tag wins over the codon's lines, at either end, in the reference CDS and the ORF alike.
      tags = ' tag "cds_start_NF"; tag "cds_end_NF";';
      const denied = await transcript(...codingLines, line('stop_codon', 201, 202), line('stop_codon', 100, 100));
      expect(referenceCdsFromGtf(denied)).toMatchObject({ start_status: 'incomplete', end_status: 'incomplete' });
      expect(orfFromGtf(denied, null)!.completeness).toBe('internal');
      tags = '';
      const alone = await transcript(line('stop_codon', 59, 59));
      expect([alone.cds, referenceCdsFromGtf(alone)]).toEqual([null, null]);
      await expect(transcript(line('CDS', 60, 100, '3'))).rejects.toThrow(
        /CDS line's phase must be 0, 1, 2 or "\.", found "3"/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('the GTF reader reads cds_start_NF / cds_end_NF as incomplete and every coding v49 transcript has a CDS', async () => {
    const v49 = await readGtf(V49);
    let coding = 0;
    const statuses = new Map<string, number>();
    for (const t of v49.transcripts.values()) {
      const cds = referenceCdsFromGtf(t);
      // A CDS exactly where there are CDS lines: MAZ-213's lone stop codon base makes none.
      expect(cds !== null, t.transcriptId).toBe(t.cdsLength > 0);
      if (!cds) continue;
      coding++;
      if (t.tags.includes('cds_start_NF')) expect(cds.start_status, t.transcriptId).toBe('incomplete');
      if (t.tags.includes('cds_end_NF')) expect(cds.end_status, t.transcriptId).toBe('incomplete');
      const key = `${cds.start_status}/${cds.end_status}`;
      statuses.set(key, (statuses.get(key) ?? 0) + 1);
    }
    expect(coding).toBeGreaterThan(0);
    expect(statuses.get('complete/complete')).toBeGreaterThan(0);
    // The region-clipped subset lacks some start_codon / stop_codon lines without an _NF tag: unknown.
    expect(Object.fromEntries(statuses)).toEqual({
      'complete/complete': 139,
      'complete/incomplete': 24,
      'complete/unknown': 125,
      'incomplete/complete': 20,
      'incomplete/incomplete': 3,
      'unknown/complete': 182,
      'unknown/incomplete': 5,
    });
  });
});
