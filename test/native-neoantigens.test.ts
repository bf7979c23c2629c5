import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { demoRelease, type DemoRelease } from './helpers/demo-release.js';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { InputError } from '../build/import/input.js';
import { insertTrack } from '../build/import/tracks.js';
import {
  placeByWildType,
  rankAndMap,
  readMhcflurry,
  readNetmhcpanIedb,
  readPvacseqAggregated,
  readPvacseqAllEpitopes,
  readPvacspliceAllEpitopes,
  releaseResolver,
} from '../build/import/native/neoantigens.js';

const DIR = join(import.meta.dirname, 'fixtures', 'native', 'neoantigens');
// The demo release imports this file as its real neoantigen track, so it lives with the data.
const PVACSEQ = join(__dirname, '../data/samples/neoantigens/pvacseq_Test.MHC_I.all_epitopes.tsv.gz');
const AGGREGATED = join(DIR, 'pvacseq_Test.MHC_I.all_epitopes.aggregated.tsv');
const PVACSPLICE = join(DIR, 'pvacsplice_HCC1395_TUMOR_DNA.MHC_I.all_epitopes.tsv.gz');
const MHCFLURRY = join(DIR, 'mhcflurry_raw_HLA-C1505_8mer.tsv');
const NETMHCPAN = join(DIR, 'netmhcpan_iedb_raw_HLA-C0303_9mer.tsv.gz');

/** The raw file as header + rows keyed by column, with the 1-based line number of each row. */
function raw(path: string): { header: string[]; rows: Map<number, Record<string, string>> } {
  const bytes = readFileSync(path);
  const text = (path.endsWith('.gz') ? gunzipSync(bytes) : bytes).toString('utf8');
  const [head, ...lines] = text.replace(/\r?\n$/, '').split(/\r?\n/);
  const header = head!.split('\t');
  const rows = new Map<number, Record<string, string>>();
  lines.forEach((l, i) => {
    const v = l.split('\t');
    rows.set(i + 2, Object.fromEntries(header.map((c, j) => [c, v[j]!])));
  });
  return { header, rows };
}

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'isoatlas-native-neo-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('pVACseq all_epitopes', () => {
  it('reads every row, computes the protein start and skips frameshifts without a mutation position', async () => {
    const { rows: rawRows } = raw(PVACSEQ);
    expect(rawRows.size).toBe(842);
    expect([...rawRows.values()].filter((r) => r.Chromosome === '22')).toHaveLength(768);
    const read = await readPvacseqAllEpitopes(PVACSEQ);
    expect(read.warnings).toEqual([]);
    const na = [...rawRows.values()].filter((r) => r['Mutation Position'] === 'NA');
    expect(na).toHaveLength(62);
    expect(na.every((r) => r['Variant Type'] === 'FS')).toBe(true);
    expect(read.skipped).toBe(62);
    expect(read.rows).toHaveLength(842 - 62);
    for (const { record, line } of read.rows) {
      const r = rawRows.get(line!)!;
      expect(record.peptide).toBe(r['MT Epitope Seq']);
      expect(record.transcript).toBe(r.Transcript);
      const pp = Number(/\d+/.exec(r['Protein Position']!)![0]);
      const mp = Number(/\d+/.exec(r['Mutation Position']!)![0]);
      expect(record.start).toBe(pp - mp + 1);
    }
  });

  it('turns one raw line into the record field by field', async () => {
    const read = await readPvacseqAllEpitopes(PVACSEQ);
    // line 2: PRICKLE4 inframe_ins, Protein Position 287-288, Mutation Position 9 → start 287 − 9 + 1
    const { rows: rawRows } = raw(PVACSEQ);
    const r = rawRows.get(2)!;
    expect(r['Gene Name']).toBe('PRICKLE4');
    expect(r['Protein Position']).toBe('287-288');
    expect(r['Mutation Position']).toBe('9');
    const row = read.rows.find((x) => x.line === 2)!;
    expect(row.file).toBe(PVACSEQ);
    expect(row.record).toEqual({
      transcript: 'ENST00000458694.1',
      transcript_id: 'ENST00000458694.1',
      peptide: 'ATLSRTLLL',
      allele: 'HLA-E*01:01',
      affinity_nm: 2122.61,
      percentile_rank: 0.12,
      start: 279,
      wt_peptide: 'ATLSRTLLA',
    });
  });
});

describe('other native formats', () => {
  it('pVACseq aggregated: best peptide per variant, start from AA Change position and Pos', async () => {
    const read = await readPvacseqAggregated(AGGREGATED);
    expect(raw(AGGREGATED).rows.size).toBe(23);
    expect(read.warnings).toEqual([]);
    expect(read.skipped).toBe(1); // TRIOBP frameshift: Pos NA
    expect(read.rows).toHaveLength(22);
    expect(read.rows[0]).toEqual({
      file: AGGREGATED,
      line: 2,
      record: {
        transcript: 'ENST00000216254.4',
        transcript_id: 'ENST00000216254.4',
        peptide: 'KFNPQTDYL',
        allele: 'HLA-G*01:09',
        affinity_nm: 1262.76,
        percentile_rank: 0.5,
        start: 506,
        wt_peptide: 'KFNPETDYL',
      }, // E510Q at Pos 5: the reference E put back
    });
  });

  it('pVACsplice all_epitopes: 448 rows, Epitope Seq and Best IC50 Score / Best Percentile', async () => {
    const read = await readPvacspliceAllEpitopes(PVACSPLICE);
    expect(raw(PVACSPLICE).rows.size).toBe(448);
    expect(read.rows).toHaveLength(448);
    expect(read.skipped).toBe(0);
    expect(read.warnings).toHaveLength(1);
    expect(read.warnings[0]).toMatch(/no epitope offset/);
    expect(read.rows[0]!.record).toEqual({
      transcript: 'ENST00000367830.3',
      transcript_id: 'ENST00000367830.3',
      peptide: 'RFKNPAWVWL',
      allele: 'HLA-E*01:01',
      affinity_nm: 12790.86,
      percentile_rank: 4.9,
      start: 37,
      wt_peptide: null,
    });
  });

  it('MHCflurry: 277 rows, empty percentile → null, transcript from seq_num', async () => {
    const asked = new Set<string>();
    const read = await readMhcflurry(MHCFLURRY, (s) => {
      asked.add(s);
      return s === '1' ? 'ENST00000000001.1' : null;
    });
    const rawRows = raw(MHCFLURRY).rows;
    expect(rawRows.size).toBe(277);
    expect(read.warnings).toEqual([]);
    expect(read.rows.length + read.skipped).toBe(277);
    expect(read.rows.length).toBe([...rawRows.values()].filter((r) => r.seq_num === '1').length);
    expect(read.rows.length).toBeGreaterThan(0);
    expect(read.skipped).toBeGreaterThan(0);
    expect([...asked].sort()).toEqual([...new Set([...rawRows.values()].map((r) => r.seq_num!))].sort());
    expect(read.rows.every((r) => r.record.percentile_rank === null)).toBe(true);
    expect(read.rows[0]!.record).toEqual({
      transcript: 'ENST00000000001.1',
      transcript_id: 'ENST00000000001.1',
      peptide: 'GLVDEQQK',
      allele: 'HLA-C*15:05',
      affinity_nm: 8741.135322197617,
      percentile_rank: null,
      start: 1,
      wt_peptide: null,
    });
  });

  it('NetMHCpan IEDB: 3040 rows (the last line has no newline), rank None → null, 1-based start', async () => {
    const read = await readNetmhcpanIedb(NETMHCPAN, (s) => `T${s}`);
    expect(raw(NETMHCPAN).rows.size).toBe(3040);
    expect(read.rows).toHaveLength(3040);
    expect(read.skipped).toBe(0);
    expect(read.warnings).toEqual([]);
    expect(read.rows.every((r) => r.record.percentile_rank === null && r.record.affinity_nm !== null)).toBe(true);
    expect(Math.min(...read.rows.map((r) => r.record.start))).toBe(1);
    expect(read.rows[0]!.record).toEqual({
      transcript: 'T106',
      transcript_id: 'T106',
      peptide: 'FARGVAQPL',
      allele: 'HLA-C*03:03',
      affinity_nm: 5.8,
      percentile_rank: null,
      start: 7,
      wt_peptide: null,
    });
  });
});

describe('malformed input', () => {
  const lines = () => gunzipSync(readFileSync(PVACSEQ)).toString('utf8').split(/\r?\n/).slice(0, 6);

  it('a renamed required column is an InputError naming the file and the column', async () => {
    const [head, ...rest] = lines();
    const file = join(tmp, 'renamed.tsv');
    writeFileSync(file, [head!.replace('\tHLA Allele\t', '\tHLA_Allele\t'), ...rest].join('\n') + '\n');
    const err = await readPvacseqAllEpitopes(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).file).toBe(file);
    expect((err as InputError).message).toMatch(/missing required column\(s\): HLA Allele/);
  });

  it('an unknown extra column is one warning, not an error', async () => {
    const [head, ...rest] = lines();
    const file = join(tmp, 'extra.tsv');
    writeFileSync(
      file,
      [`${head}\tMy Note\tOther`, ...rest.filter((l) => l).map((l) => `${l}\tx\ty`)].join('\n') + '\n',
    );
    const read = await readPvacseqAllEpitopes(file);
    expect(read.warnings).toHaveLength(1);
    expect(read.warnings[0]).toMatch(/My Note, Other/);
    expect(read.rows.length + read.skipped).toBe(5);
  });
});

describe('real mapping onto the demo release', () => {
  // The whole demo: every pVACseq transcript of the sample is either one of its isoforms or not on chr22.
  let release: DemoRelease;
  beforeAll(async () => {
    release = await demoRelease();
  });
  it('maps pVACseq transcripts by unversioned ENST id, checks WT peptides, and inserts into a copy', async () => {
    const demo = new Database(release.db, { readonly: true, fileMustExist: true });
    const isoforms = demo
      .prepare('SELECT transcript_id, transcript_id_unversioned, protein_sequence FROM isoforms')
      .all() as {
      transcript_id: string;
      transcript_id_unversioned: string | null;
      protein_sequence: string | null;
    }[];
    demo.close();
    const protein = new Map(isoforms.map((i) => [i.transcript_id, i.protein_sequence]));
    const resolve = releaseResolver(isoforms);

    const read = await readPvacseqAllEpitopes(PVACSEQ);
    const { located, unmapped } = rankAndMap(read.rows, resolve);
    expect(located.length + unmapped).toBe(read.rows.length);
    // Only chr22 transcripts can be in the chr22 release.
    const rawRows = raw(PVACSEQ).rows;
    expect(located.every((l) => rawRows.get(l.line!)!.Chromosome === '22')).toBe(true);
    const mappedRaw = read.rows.filter((r) => resolve(r.record.transcript) !== null);
    expect(mappedRaw.length).toBe(located.length);
    // by unversioned id: the release id has the same ENST stem
    for (const l of located)
      expect(l.record.transcript_id.split('.')[0]).toBe(rawRows.get(l.line!)!.Transcript!.split('.')[0]);

    // WT peptide at the computed start on the release isoform's protein. All mapped rows are missense
    // variants on older transcript versions than GENCODE v38's. The start is right wherever the protein
    // did not change between versions; the exceptions are CECR2 (ENST00000262608.8 → .13: the v38 protein
    // is 21 aa longer at the N-terminus, so the WT peptide sits exactly 21 residues later) and IGLV6-57
    // (ENST00000390285.3 → .4: the WT peptides do not occur in the v38 protein at all).
    let withWt = 0;
    let agree = 0;
    const wrong = new Map<string, Set<number | null>>(); // release transcript → offsets where the WT peptide actually is
    for (const l of located) {
      const wt = rawRows.get(l.line!)!['WT Epitope Seq']!;
      const seq = protein.get(l.record.transcript_id);
      if (wt === 'NA' || !seq) continue;
      withWt += 1;
      if (seq.substr(l.record.start - 1, wt.length) === wt) {
        agree += 1;
      } else {
        const at = seq.indexOf(wt);
        if (!wrong.has(l.record.transcript_id)) wrong.set(l.record.transcript_id, new Set());
        wrong.get(l.record.transcript_id)!.add(at < 0 ? null : at + 1 - l.record.start);
      }
    }
    console.log(
      `pVACseq: ${read.rows.length} parsed, ${read.skipped} skipped, ${located.length} mapped, ${unmapped} unmapped; WT peptide at start: ${agree}/${withWt}`,
    );
    expect(located.length).toBe(612);
    expect(unmapped).toBe(168);
    expect(withWt).toBe(612);
    expect(agree / withWt).toBeGreaterThanOrEqual(498 / 612);
    expect(Object.fromEntries([...wrong].map(([t, offsets]) => [t, [...offsets]]))).toEqual({
      'ENST00000262608.13': [21],
      'ENST00000390285.4': [null],
    });

    // placeByWildType() fixes it: CECR2's 38 rows move 21 residues to their WT epitope; IGLV6-57's 76
    // "mutant" epitopes are the v38 protein itself, so they are no neoantigens of it and are skipped.
    const check = placeByWildType(read.rows, resolve, (id) => protein.get(id) ?? null);
    expect(check.moved).toBe(38);
    expect(check.skipped).toEqual({
      mutant_in_release_protein: 76,
      wild_type_not_in_protein: 0,
      wild_type_ambiguous: 0,
      wild_type_unknown: 0,
    });
    const placed = rankAndMap(check.rows, resolve).located;
    expect(placed).toHaveLength(612 - 76);
    for (const l of placed) {
      const r = rawRows.get(l.line!)!;
      const seq = protein.get(l.record.transcript_id)!;
      expect(seq.substr(l.record.start - 1, r['WT Epitope Seq']!.length), r.Index).toBe(r['WT Epitope Seq']);
      const computed =
        Number(/\d+/.exec(r['Protein Position']!)![0]) - Number(/\d+/.exec(r['Mutation Position']!)![0]) + 1;
      expect(l.record.start - computed, r.Index).toBe(l.record.transcript_id === 'ENST00000262608.13' ? 21 : 0);
    }
    expect(placed.some((l) => l.record.transcript_id === 'ENST00000390285.4')).toBe(false);

    // aggregated: the best peptide sits at start on the protein and differs from it only at `Pos`
    // (missense rows on transcripts whose protein did not change between versions)
    const agg = await readPvacseqAggregated(AGGREGATED);
    const aggRaw = raw(AGGREGATED).rows;
    let aggChecked = 0;
    for (const l of rankAndMap(agg.rows, resolve).located) {
      const r = aggRaw.get(l.line!)!;
      if (!r.Index!.includes('.missense.') || wrong.has(l.record.transcript_id)) continue;
      const seq = protein.get(l.record.transcript_id)!;
      const onProtein = seq.substr(l.record.start - 1, l.record.peptide.length);
      const diffs = [...l.record.peptide].map((c, i) => (c === onProtein[i] ? 0 : i + 1)).filter((i) => i);
      expect(diffs, r.Index).toEqual([Number(r.Pos)]);
      aggChecked += 1;
    }
    expect(aggChecked).toBeGreaterThanOrEqual(10);
    // The aggregated import is placed the same way: every kept row's wild type (the best peptide with
    // the AA Change reference residue put back) is the protein at its start.
    const aggCheck = placeByWildType(agg.rows, resolve, (id) => protein.get(id) ?? null);
    const aggPlaced = rankAndMap(aggCheck.rows, resolve).located;
    for (const l of aggPlaced) {
      const r = aggRaw.get(l.line!)!;
      const m = /^([A-Z])\d+([A-Z])$/.exec(r['AA Change']!)!;
      expect(m, r.Index).not.toBeNull();
      const pos = Number(r.Pos);
      const wt = l.record.peptide.slice(0, pos - 1) + m[1] + l.record.peptide.slice(pos);
      expect(protein.get(l.record.transcript_id)!.substr(l.record.start - 1, wt.length), r.Index).toBe(wt);
    }
    expect(aggPlaced.length).toBeGreaterThanOrEqual(aggChecked);
    console.log(
      `aggregated: ${agg.rows.length} rows, ${aggChecked} missense rows checked against the protein; placed ${aggPlaced.length}, moved ${aggCheck.moved}, skipped ${JSON.stringify(aggCheck.skipped)}`,
    );

    // insert into a copy of the demo DB
    const copy = join(tmp, 'release.sqlite');
    copyFileSync(release.db, copy);
    const db = new Database(copy);
    try {
      // The demo pipeline imported this same file, placed the same way: it holds exactly these real records.
      expect(
        (db.prepare(`SELECT count(*) AS n FROM neoantigens WHERE provenance = 'real'`).get() as { n: number }).n,
      ).toBe(placed.length);
      db.exec(
        `DELETE FROM neoantigens WHERE provenance = 'real'; DELETE FROM track_sources WHERE input_file = 'pvacseq_Test.MHC_I.all_epitopes.tsv.gz'`,
      );
      const before = (
        db.prepare(`SELECT count(*) AS n FROM neoantigens WHERE provenance = 'real'`).get() as { n: number }
      ).n;
      const n = await insertTrack(
        db,
        { track: 'neoantigens', file: PVACSEQ, source: 'pVACseq', generated: false },
        placed,
      );
      expect(n).toBe(placed.length);
      const after = (
        db.prepare(`SELECT count(*) AS n FROM neoantigens WHERE provenance = 'real'`).get() as { n: number }
      ).n;
      expect(after - before).toBe(placed.length);
      const src = db
        .prepare(`SELECT source, generated, records FROM track_sources WHERE track = 'neoantigens' AND input_file = ?`)
        .get('pvacseq_Test.MHC_I.all_epitopes.tsv.gz');
      expect(src).toEqual({ source: 'pVACseq', generated: 0, records: placed.length });
    } finally {
      db.close();
    }
  });
});
