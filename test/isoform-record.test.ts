// The isoform record's sequence, exons, ORF, QC and expression source, checked against the raw
// chr22 inputs read here independently of the importers (plain gunzip and split).
import { beforeAll, describe, expect, it } from 'vitest';
import { gunzipSync } from 'node:zlib';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import fg from 'fast-glob';
import type { DomainListBody, IsoformBody, GeneBody, NeoantigenListBody } from '../edge/contract/schemas.js';
import { treePaths } from '../edge/contract/tree.js';
import { validate } from './helpers/schemas.js';
import { demoRelease, type DemoRelease } from './helpers/demo-release.js';
import { importCore, loadCoreConfig } from '../build/import/core.js';
import { InputError } from '../build/import/input.js';

const chr22 = (f: string) => join(__dirname, '../data/chr22', f);
const lines = (path: string) =>
  gunzipSync(readFileSync(path))
    .toString('utf8')
    .split('\n')
    .filter((l) => l && !l.startsWith('#'));

function table(path: string): Record<string, string>[] {
  const [header, ...rows] = lines(path).map((l) => l.split('\t'));
  return rows.map((r) => Object.fromEntries(header.map((h, i) => [h, r[i]])));
}

/** Exons per transcript in the order the GTF lists them, with the strand. */
function gtfExons(path: string): Map<string, { strand: string; exons: [number, number][] }> {
  const out = new Map<string, { strand: string; exons: [number, number][] }>();
  for (const l of lines(path)) {
    const f = l.split('\t');
    if (f[2] !== 'exon') continue;
    const id = /transcript_id "([^"]+)"/.exec(f[8])![1];
    const t = out.get(id) ?? { strand: f[6], exons: [] };
    t.exons.push([Number(f[3]), Number(f[4])]);
    out.set(id, t);
  }
  return out;
}

function fasta(path: string): Map<string, string> {
  const out = new Map<string, string>();
  let id = '';
  for (const l of lines(path)) {
    if (l.startsWith('>')) out.set((id = l.slice(1).split(/\s/)[0]), '');
    else out.set(id, out.get(id)! + l.trim());
  }
  return out;
}

// The demo's whole tree: these checks hold every record of the real chr22 data against its input.
let demo: DemoRelease;
beforeAll(async () => {
  demo = await demoRelease();
});
const tree = () => demo.tree;
const record = (id: string) => JSON.parse(readFileSync(join(tree(), treePaths.isoform(id)), 'utf8')) as IsoformBody;

describe('isoform records of the demo release', () => {
  const sets = [
    {
      gtf: 'gencode.v38.basic_chr22_corrected.gtf.gz',
      cls: 'gencode.v38.basic_chr22_classification.txt.gz',
      faa: 'gencode.v38.basic_chr22_corrected.faa.gz',
    },
    { gtf: 'UHR_chr22_corrected.gtf.gz', cls: 'UHR_chr22_classification.txt.gz', faa: 'UHR_chr22_corrected.faa.gz' },
  ];

  it('MAPK1-201 carries its 360-aa protein and its 9 exons as the GTF has them, 5′ to 3′', () => {
    const iso = record('ENST00000215832.11');
    expect(iso.transcript_name).toBe('MAPK1-201');
    const protein = fasta(chr22(sets[0].faa)).get('ENST00000215832.11')!;
    expect(iso.protein_sequence).toBe(protein.replace(/\*$/, ''));
    expect(iso.protein_sequence).toHaveLength(360);
    const gtf = gtfExons(chr22(sets[0].gtf)).get('ENST00000215832.11')!;
    expect(gtf.strand).toBe('-');
    const expected = [...gtf.exons].sort((a, b) => b[0] - a[0]).map(([start, end]) => ({ start, end }));
    expect(iso.exons).toEqual(expected);
    expect(iso.exons).toHaveLength(9);
    expect(iso.orf).toEqual({
      start: 21769204,
      end: 21867440,
      transcript_start: 206,
      transcript_end: 1288,
      completeness: 'complete',
      source: 'sqanti3',
      matches_reference: true,
      start_vs_reference: 'same',
      stop_vs_reference: 'same',
      noncoding_biotype: false,
    });
    expect(iso.reference_cds).toEqual({
      start: 21769204,
      end: 21867440,
      start_status: 'complete',
      end_status: 'complete',
      source: 'genepred',
    });
    expect(validate('Isoform', iso)).toEqual([]);
  });

  it('every isoform: exons are the GTF’s, sequence is the FASTA’s, ORF and completeness follow the classification', () => {
    let checked = 0;
    const completeness = new Map<string, number>();
    for (const set of sets) {
      const exons = gtfExons(chr22(set.gtf));
      const proteins = fasta(chr22(set.faa));
      for (const row of table(chr22(set.cls))) {
        const iso = record(row.isoform);
        const gtf = exons.get(row.isoform)!;
        const ordered = [...gtf.exons].sort((a, b) => (gtf.strand === '+' ? a[0] - b[0] : b[0] - a[0]));
        expect(
          iso.exons.map((e) => [e.start, e.end]),
          row.isoform,
        ).toEqual(ordered);
        expect(iso.exon_count).toBe(ordered.length);
        if (row.coding !== 'coding') {
          expect(iso.protein_sequence, row.isoform).toBeNull();
          expect(iso.orf, row.isoform).toBeNull();
          continue;
        }
        expect(iso.protein_sequence, row.isoform).toBe(proteins.get(row.isoform)!.replace(/\*$/, ''));
        expect(iso.protein_length).toBe(iso.protein_sequence!.length);
        const [g1, g2] = [Number(row.CDS_genomic_start), Number(row.CDS_genomic_end)];
        expect(iso.orf, row.isoform).toMatchObject({
          start: Math.min(g1, g2),
          end: Math.max(g1, g2),
          transcript_start: Number(row.CDS_start),
          transcript_end: Number(row.CDS_end),
          source: 'sqanti3',
        });
        const hasStart = row.ORF_seq.startsWith('M');
        const hasStop = row.ORF_seq.endsWith('*');
        const expected =
          hasStart && hasStop ? 'complete' : hasStop ? '5prime_partial' : hasStart ? '3prime_partial' : 'internal';
        expect(iso.orf!.completeness, row.isoform).toBe(expected);
        completeness.set(expected, (completeness.get(expected) ?? 0) + 1);
        checked++;
      }
    }
    expect(checked).toBe(1589 + 3109);
    // The figures: 238 proteins do not start with M, 109 have no stop.
    expect((completeness.get('5prime_partial') ?? 0) + (completeness.get('internal') ?? 0)).toBe(238);
    expect((completeness.get('3prime_partial') ?? 0) + (completeness.get('internal') ?? 0)).toBe(109);
  });

  it('every reference isoform states the genePred’s CDS; the ORF matches it exactly when their genomic ends are equal', () => {
    const genePred = new Map<string, string[]>();
    for (const l of lines(chr22('refAnnotation_gencode.v38.basic_chr22.genePred.gz'))) {
      const f = l.split('\t');
      genePred.set(f[0], f);
    }
    const status = { cmpl: 'complete', incmpl: 'incomplete', unk: 'unknown' } as Record<string, string>;
    const counts = { annotated: 0, matching: 0, differing: 0, servedNoncoding: 0, predictedOnly: 0 };
    const differing = new Map<string, number>();
    for (const row of table(chr22(sets[0].cls))) {
      const iso = record(row.isoform);
      const f = genePred.get(row.isoform)!;
      const [cdsStart, cdsEnd] = [Number(f[5]), Number(f[6])];
      if (cdsStart === cdsEnd) {
        expect(iso.reference_cds, row.isoform).toBeNull();
        if (iso.orf) {
          counts.predictedOnly++;
          expect(iso.orf.matches_reference).toBeNull();
        }
        continue;
      }
      counts.annotated++;
      const [left, right] = [status[f[12]], status[f[13]]];
      expect(iso.reference_cds, row.isoform).toEqual({
        start: cdsStart + 1,
        end: cdsEnd,
        start_status: f[2] === '+' ? left : right,
        end_status: f[2] === '+' ? right : left,
        source: 'genepred',
      });
      if (!iso.orf) {
        counts.servedNoncoding++;
        continue;
      }
      const same = iso.orf.start === cdsStart + 1 && iso.orf.end === cdsEnd;
      expect(iso.orf.matches_reference, row.isoform).toBe(same);
      if (same) counts.matching++;
      else {
        counts.differing++;
        const key = `${iso.orf.start_vs_reference}/${iso.orf.stop_vs_reference}`;
        differing.set(key, (differing.get(key) ?? 0) + 1);
      }
    }
    // The figures: 117 of the 1,295 transcripts coding in both differ, 59 are served non-coding.
    expect(counts).toEqual({
      annotated: 1354,
      matching: 1178,
      differing: 117,
      servedNoncoding: 59,
      predictedOnly: 294,
    });
    expect(Object.fromEntries(differing)).toEqual({
      'upstream/same': 46,
      'downstream/same': 15,
      'downstream/late': 18,
      'upstream/early': 17,
      'same/early': 15,
      'upstream/late': 5,
      'downstream/early': 1,
    });
  });

  it('the issue’s examples: extensions, a 5′-partial prediction, a served non-coding and selenoproteins cut early', () => {
    const pi4ka = record('ENST00000255882.11');
    expect(pi4ka.protein_length).toBe(2130);
    expect(pi4ka.orf).toMatchObject({
      matches_reference: false,
      start_vs_reference: 'upstream',
      stop_vs_reference: 'same',
    });
    // 2,102 aa annotated: the CDS with its stop codon spans 2,103 codons of the same exons.
    const cds = pi4ka.reference_cds!;
    expect(cds).toMatchObject({ start_status: 'complete', end_status: 'complete' });
    const onExons = (s: number, e: number) =>
      pi4ka.exons.reduce((n, x) => n + Math.max(0, Math.min(e, x.end) - Math.max(s, x.start) + 1), 0);
    expect(onExons(cds.start, cds.end)).toBe(2103 * 3);

    const c22orf39 = record('ENST00000399562.9');
    expect(c22orf39.protein_length).toBe(175);
    expect(c22orf39.orf).toMatchObject({ completeness: '5prime_partial', matches_reference: false });
    expect(c22orf39.reference_cds).toMatchObject({ start_status: 'complete', end_status: 'complete' });

    const gsc2 = record('ENST00000086933.3');
    expect(gsc2.coding).toBe(false);
    expect(gsc2.orf).toBeNull();
    expect(gsc2.reference_cds).toEqual({
      start: 19148991,
      end: 19150283,
      start_status: 'complete',
      end_status: 'complete',
      source: 'genepred',
    });

    // TXNRD2-204: 522 aa predicted, 524 annotated: the prediction stops at the selenocysteine codon.
    // docs/API.md names it as its example.
    const txnrd2 = record('ENST00000400521.7');
    expect([txnrd2.transcript_name, txnrd2.protein_length]).toEqual(['TXNRD2-204', 522]);
    expect(readFileSync(join(__dirname, '../docs/API.md'), 'utf8')).toContain(
      `${txnrd2.transcript_name}, ${txnrd2.transcript_id}, the gene's canonical: ${txnrd2.protein_length} aa predicted`,
    );
    expect(txnrd2.canonical).toBe(true);
    expect(txnrd2.orf).toMatchObject({
      completeness: 'complete',
      matches_reference: false,
      start_vs_reference: 'same',
      stop_vs_reference: 'early',
    });
    // SELENOO-201: 666 aa predicted, 669 annotated (its CDS spans 670 codons with the stop).
    const selenoo = record('ENST00000380903.7');
    expect([selenoo.transcript_name, selenoo.protein_length]).toEqual(['SELENOO-201', 666]);
    expect(selenoo.orf).toMatchObject({
      matches_reference: false,
      start_vs_reference: 'same',
      stop_vs_reference: 'early',
    });
    // SELENOM-201 and -202: SQANTI3 finds no ORF, the annotation's CDS stays visible.
    for (const id of ['ENST00000400299.6', 'ENST00000402395.5']) {
      const selenom = record(id);
      expect(selenom.transcript_name, id).toMatch(/^SELENOM-20[12]$/);
      expect(selenom.orf, id).toBeNull();
      expect(selenom.reference_cds, id).toMatchObject({ start: 31104970, end: 31107505, start_status: 'complete' });
    }
    for (const id of ['ENST00000255882.11', 'ENST00000399562.9', 'ENST00000086933.3', 'ENST00000400521.7'])
      expect(validate('Isoform', record(id)), id).toEqual([]);
  });

  it('long-read isoforms state no reference CDS and no comparison with one', () => {
    for (const row of table(chr22(sets[1].cls)).slice(0, 500)) {
      const iso = record(row.isoform);
      expect(iso.reference_cds, row.isoform).toBeNull();
      if (iso.orf) expect(iso.orf.matches_reference, row.isoform).toBeNull();
    }
  });

  it('long-read isoforms carry SQANTI3 QC as the classification has it; reference isoforms none', () => {
    const flag = (v: string, yes = 'TRUE', no = 'FALSE') => (v === yes ? true : v === no ? false : null);
    const int = (v: string) => (v === 'NA' ? null : Number(v));
    for (const row of table(chr22(sets[1].cls))) {
      const iso = record(row.isoform);
      expect(iso.qc, row.isoform).toEqual({
        subcategory: row.subcategory,
        fsm_class: row.FSM_class,
        all_canonical: flag(row.all_canonical, 'canonical', 'non_canonical'),
        rts_stage: flag(row.RTS_stage),
        diff_to_tss: int(row.diff_to_TSS),
        diff_to_tts: int(row.diff_to_TTS),
        within_cage_peak: flag(row.within_CAGE_peak),
        dist_to_cage_peak: int(row.dist_to_CAGE_peak),
        polya_motif: row.polyA_motif === 'NA' ? null : row.polyA_motif,
        polya_motif_found: flag(row.polyA_motif_found),
        polya_dist: int(row.polyA_dist),
        full_length_reads: int(row.FL),
      });
    }
    expect(record('ENST00000215832.11').qc).toBeNull();
    const pb = record('PB.3796.1');
    expect(validate('Isoform', pb)).toEqual([]);
  });

  it('says which quantification each TPM comes from', () => {
    const ref = record('ENST00000215832.11');
    const lr = record('PB.3796.1');
    expect(ref.expression_tpm).toBe(2295.135);
    expect(ref.expression_source).toMatch(/^GENCODE quantification/);
    expect(lr.expression_source).toMatch(/^long-read quantification/);
    const files = fg.sync('api/v1/isoforms/*.json', { cwd: tree() });
    for (const f of files.filter((_, i) => i % 25 === 0)) {
      const iso = JSON.parse(readFileSync(join(tree(), f), 'utf8')) as IsoformBody;
      expect(iso.expression_source === null, f).toBe(iso.expression_tpm === null);
    }
  });

  it('the long-read TPM is the mean of two kallisto replicates, and expression_source says so', () => {
    const rep1 = new Map(table(chr22('UHR_Rep1_chr22_abundance.tsv.gz')).map((r) => [r.target_id, Number(r.tpm)]));
    let differ = 0;
    for (const row of table(chr22(sets[1].cls))) {
      const [mean, first] = [Number(row.iso_exp), rep1.get(row.isoform)!];
      if (Math.abs(mean - first) > 1e-3) differ++;
      // (Rep1 + Rep2) / 2 = iso_exp leaves a second replicate of 2 · iso_exp − Rep1, a TPM: never negative.
      expect(2 * mean - first, row.isoform).toBeGreaterThan(-1e-3);
    }
    expect(differ).toBe(2593);
    expect(record('PB.3796.1').expression_source).toMatch(/mean TPM of two kallisto quantifications/);
  });

  it('noncoding_biotype: a transcript whose gene GENCODE annotates a CDS is never flagged by NCBI’s gene type', () => {
    // NCBI Gene files these GENCODE protein-coding readthroughs and USP41 as ncRNA or pseudo.
    for (const id of ['ENST00000358654.2', 'ENST00000453634.5', 'ENST00000455843.5', 'ENST00000292729.12']) {
      const iso = record(id);
      expect(iso.reference_cds, id).not.toBeNull();
      expect(iso.orf!.noncoding_biotype, id).toBe(false);
    }
    const flagged = fg
      .sync('api/v1/isoforms/ENST*.json', { cwd: tree() })
      .map((f) => JSON.parse(readFileSync(join(tree(), f), 'utf8')) as IsoformBody)
      .filter((i) => i.orf?.noncoding_biotype === true);
    expect(flagged.filter((i) => i.reference_cds !== null)).toEqual([]);
  });

  it('chooses a complete ORF as canonical over a longer partial one (CENPM)', () => {
    const gene = JSON.parse(readFileSync(join(tree(), treePaths.gene('ENSG00000100162')), 'utf8')) as GeneBody;
    expect(gene.symbol).toBe('CENPM');
    const canonical = record(gene.canonical_isoform!.transcript_id);
    expect(canonical.orf!.completeness).toBe('complete');
    expect(canonical.protein_length).toBe(180);
    // A longer reference ORF exists, but it is 5′ partial.
    const longer = gene.isoforms
      .filter((i) => i.source === 'reference' && (i.protein_length ?? 0) > 180)
      .map((i) => record(i.transcript_id));
    expect(longer.length).toBeGreaterThan(0);
    expect(longer.every((i) => i.orf!.completeness !== 'complete')).toBe(true);
  });
});

describe('neoantigens read against the served protein', () => {
  it("CECR2's real pVACseq epitopes sit on the residues they claim: their wild type at start, mutated where the file says", () => {
    const rows = table(join(__dirname, '../data/samples/neoantigens/pvacseq_Test.MHC_I.all_epitopes.tsv.gz')).filter(
      (r) => r.Transcript.startsWith('ENST00000262608.'),
    );
    expect(rows.length).toBe(38);
    const iso = record('ENST00000262608.13');
    const list = JSON.parse(
      readFileSync(join(tree(), treePaths.neoantigens(iso.transcript_id)), 'utf8'),
    ) as NeoantigenListBody;
    const real = list.items.filter((n) => n.provenance === 'real');
    expect(real.length).toBeGreaterThan(0);
    for (const n of real) {
      const row = rows.find((r) => r['MT Epitope Seq'] === n.peptide && r['HLA Allele'] === n.allele)!;
      expect(row, n.peptide).toBeDefined();
      expect(n.wt_peptide).toBe(row['WT Epitope Seq']);
      expect(iso.protein_sequence!.slice(n.start - 1, n.end)).toBe(row['WT Epitope Seq']);
      expect(n.mutated_positions).toContain(Number(/\d+/.exec(row['Mutation Position'])![0]));
    }
    // IGLV6-57's "mutant" peptides are its v38 protein: none is served as a neoantigen of it.
    const iglv = JSON.parse(
      readFileSync(join(tree(), treePaths.neoantigens('ENST00000390285.4')), 'utf8'),
    ) as NeoantigenListBody;
    expect(iglv.items.filter((n) => n.provenance === 'real')).toEqual([]);
  });

  it('every listed neoantigen: wt_peptide is the protein at start–end, mutated_positions where the peptide differs', () => {
    for (const f of fg.sync('api/v1/isoforms/*/neoantigens.json', { cwd: tree() }).filter((_, i) => i % 7 === 0)) {
      const list = JSON.parse(readFileSync(join(tree(), f), 'utf8')) as NeoantigenListBody;
      if (!list.items.length) continue;
      const protein = record(list.transcript_id).protein_sequence!;
      for (const n of list.items) {
        expect(n.wt_peptide, f).toBe(protein.slice(n.start - 1, n.end));
        expect(n.mutated_positions).toEqual(
          [...n.peptide].map((aa, k) => (aa === n.wt_peptide![k] ? 0 : k + 1)).filter(Boolean),
        );
      }
    }
  });
});

describe('domain scores keep their meaning', () => {
  it('a Pfam score is a bit score; a TED score is in uncertainty or confidence, never in score', () => {
    let ted = 0;
    for (const f of fg.sync('api/v1/isoforms/*/domains.json', { cwd: tree() })) {
      for (const d of (JSON.parse(readFileSync(join(tree(), f), 'utf8')) as DomainListBody).items) {
        if (d.source === 'pfam') expect([d.uncertainty, d.confidence], f).toEqual([null, null]);
        else {
          expect(d.score, f).toBeNull();
          if (d.confidence !== null) ted++;
        }
      }
    }
    expect(ted).toBeGreaterThan(0);
  });
});

describe('classification and GTF that disagree', () => {
  it('refuses an ORF whose transcript bounds do not land on its genomic ends, naming file, line and column', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-orf-bad-'));
    try {
      writeFileSync(
        join(dir, 'ref.gtf'),
        [
          'chr1\tX\ttranscript\t101\t400\t.\t+\t.\ttranscript_id "ENST00000000001.1"; gene_id "ENSG00000000001.1"; gene_name "G1";',
          'chr1\tX\texon\t101\t200\t.\t+\t.\ttranscript_id "ENST00000000001.1"; gene_id "ENSG00000000001.1";',
          'chr1\tX\texon\t301\t400\t.\t+\t.\ttranscript_id "ENST00000000001.1"; gene_id "ENSG00000000001.1";',
        ].join('\n') + '\n',
      );
      const header = [
        'isoform',
        'chrom',
        'strand',
        'length',
        'exons',
        'structural_category',
        'associated_gene',
        'associated_transcript',
        'coding',
        'ORF_length',
        'CDS_start',
        'CDS_end',
        'CDS_genomic_start',
        'CDS_genomic_end',
        'predicted_NMD',
        'ORF_seq',
      ];
      // CDS 11–130 on the transcript is 111–330 on the genome (across the intron), not 111–230.
      const row = [
        'ENST00000000001.1',
        'chr1',
        '+',
        '200',
        '2',
        'full-splice_match',
        'ENSG00000000001.1',
        'ENST00000000001.1',
        'coding',
        '40',
        '11',
        '130',
        '111',
        '230',
        'FALSE',
        `M${'A'.repeat(38)}*`,
      ];
      writeFileSync(join(dir, 'ref.txt'), `${header.join('\t')}\n${row.join('\t')}\n`);
      writeFileSync(
        join(dir, 'config.json'),
        JSON.stringify({
          release: 't',
          date: '2026-11-25',
          title: 't',
          assembly: 'GRCh38',
          reference: { gtf: 'ref.gtf', classification: 'ref.txt', source: 'test' },
        }),
      );
      const err = await importCore(loadCoreConfig(join(dir, 'config.json')), join(dir, 'out.sqlite')).catch((e) => e);
      expect(err).toBeInstanceOf(InputError);
      expect(String(err.message)).toMatch(
        /ref\.txt:2.*CDS_start.*maps to 111–330.*not to CDS_genomic_start 111–CDS_genomic_end 230/s,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
