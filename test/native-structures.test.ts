// Native structure-model importer on real AlphaFold DB, ColabFold, AlphaPulldown (ModelCIF) and PDB files
// (provenance: test/fixtures/native/structures/README.md). Independent checks use simple regexes over
// the file text, not the parser.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { miniRelease } from './helpers/mini-release.js';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import { InputError } from '../build/import/input.js';
import { insertTrack } from '../build/import/tracks.js';
import {
  parseStructureModel,
  readStructureMapping,
  recordMeanPlddt,
  structureRecords,
  type ParsedModel,
} from '../build/import/native/structures.js';

const FIX = join(import.meta.dirname, 'fixtures', 'native', 'structures');
const Q5VSL9 = join(FIX, 'AF-Q5VSL9-F1-model_v4.cif.gz');
const F3 = join(FIX, 'AF-Q15772-F3-model_v4.cif.gz');
const PDB = join(FIX, 'AF-Q96HM7-F1-model_v4.pdb');
const COLABFOLD = join(FIX, 'colabfold_ERR550519_2213899_unrelaxed_model_1.cif');
const PULLDOWN = join(FIX, 'alphapulldown_TEST_ranked_0.modelcif.cif');

const text = (path: string) => {
  const raw = readFileSync(path);
  return (raw[0] === 0x1f && raw[1] === 0x8b ? gunzipSync(raw) : raw).toString('utf8');
};
/** CA B factors of an mmCIF file, by a regex over ATOM lines with the column index given by hand. */
const cifCaB = (t: string, bColumn: number) =>
  t
    .split('\n')
    .filter((l) => /^ATOM\s+\d+\s+C\s+CA\s/.test(l))
    .map((l) => Number(l.trim().split(/\s+/)[bColumn]));
const pdbCaB = (t: string) =>
  t
    .split('\n')
    .filter((l) => /^ATOM.{8} CA /.test(l))
    .map((l) => Number(l.slice(60, 66)));
/** _entity_poly.pdbx_seq_one_letter_code as a ;-text field. */
const entitySeq = (t: string) =>
  /_entity_poly\.pdbx_seq_one_letter_code\s*\n;([^;]*)\n;/.exec(t)![1].replace(/\s/g, '');
const round2 = (x: number) => Math.round(x * 100) / 100;
const avg = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;

async function expectInputError(p: Promise<unknown>): Promise<InputError> {
  const err = await p.then(
    () => null,
    (e: unknown) => e,
  );
  expect(err).toBeInstanceOf(InputError);
  return err as InputError;
}

const models: Record<string, ParsedModel> = {};
let tmp: string;
beforeAll(async () => {
  for (const [k, p] of Object.entries({ Q5VSL9, F3, PDB, COLABFOLD, PULLDOWN }))
    models[k] = await parseStructureModel(p);
  tmp = mkdtempSync(join(tmpdir(), 'isoatlas-structures-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('parseStructureModel on real samples', () => {
  it('AFDB mmCIF (gzipped): AF-Q5VSL9-F1, 837 residues, pLDDT from _ma_qa_metric_local', () => {
    const m = models.Q5VSL9;
    const t = text(Q5VSL9);
    expect(m.format).toBe('mmcif');
    expect(m.modelId).toBe('AF-Q5VSL9-F1');
    expect(m.sequence.length).toBe(837);
    expect(m.sequence).toBe(entitySeq(t));
    expect(m.firstResidue).toBe(1);
    expect(m.fragment).toEqual({ index: 1, uniprotStart: 1, uniprotEnd: 837 });
    // B_iso_or_equiv is the 15th column (index 14) in AFDB files
    const b = cifCaB(t, 14);
    expect(b.length).toBe(837);
    expect(m.bFactors).toEqual(b);
    // _ma_qa_metric_local rows with metric_id 2 (local pLDDT): "A MET 1 2 39.15 1 1"
    const local = t
      .split('\n')
      .map((l) => /^A [A-Z]{3} +\d+ +2 +([\d.]+) +1 +\d+\s*$/.exec(l))
      .filter(Boolean)
      .map((x) => Number(x![1]));
    expect(local.length).toBe(837);
    expect(m.plddtSource).toBe('ma_qa_metric_local');
    expect(m.plddt).toEqual(local);
    expect(m.plddt).toEqual(m.bFactors); // the two records of pLDDT agree residue by residue
    expect(m.globalPlddt).toBe(81.24);
    // The per-residue mean is 80.82; AFDB's global 81.24 is the mean over all 6718 atoms.
    expect(round2(m.meanPlddt)).toBe(80.82);
    expect(round2(m.atomMeanBFactor)).toBe(81.24);
    expect(Math.abs(round2(m.atomMeanBFactor) - m.globalPlddt!)).toBeLessThan(0.01);
    expect(recordMeanPlddt(m)).toBe(81.24);
    expect(m.bytes.length).toBe(768380); // decompressed text
    expect(m.bytes.equals(gunzipSync(readFileSync(Q5VSL9)))).toBe(true);
  });

  it('AFDB fragment F3 of Q15772: 1400 residues covering UniProt 401–1800', () => {
    const m = models.F3;
    const t = text(F3);
    expect(m.modelId).toBe('AF-Q15772-F3');
    expect(m.sequence.length).toBe(1400);
    expect(m.sequence).toBe(entitySeq(t));
    expect(m.sequence.startsWith('LDKLQFFEERRRSLERSDSP')).toBe(true);
    expect(m.firstResidue).toBe(1); // model numbering restarts at 1; the UniProt offset is in `fragment`
    expect(m.fragment).toEqual({ index: 3, uniprotStart: 401, uniprotEnd: 1800 });
    expect(m.bFactors).toEqual(cifCaB(t, 14));
    expect(m.plddtSource).toBe('ma_qa_metric_local');
    expect(m.plddt).toEqual(m.bFactors);
    expect(m.globalPlddt).toBe(69.32);
    expect(round2(m.meanPlddt)).toBe(69.01);
    expect(round2(m.atomMeanBFactor)).toBe(69.32);
    expect(recordMeanPlddt(m)).toBe(69.32);
  });

  it('AFDB PDB format: Q96HM7, 432 residues from CA records, pLDDT in columns 61–66', () => {
    const m = models.PDB;
    const t = text(PDB);
    expect(m.format).toBe('pdb');
    expect(m.modelId).toBe('AF-Q96HM7-F1-model_v4');
    const b = pdbCaB(t);
    expect(b.length).toBe(432); // the samples README says 267; the file (DBREF, SEQRES, CA atoms) says 432
    expect(m.sequence.length).toBe(432);
    expect(m.sequence.startsWith('MILLRASEVRQLLHNKFVVI')).toBe(true);
    expect(m.bFactors).toEqual(b);
    expect(m.plddt).toEqual(b);
    expect(m.plddtSource).toBe('b_factor');
    expect(m.globalPlddt).toBeNull();
    expect(m.fragment).toEqual({ index: 1, uniprotStart: 1, uniprotEnd: 432 });
    expect(round2(m.meanPlddt)).toBe(round2(avg(b)));
    expect(round2(m.meanPlddt)).toBe(71.64);
    expect(recordMeanPlddt(m)).toBe(71.64);
  });

  it('ColabFold minimal mmCIF (18 columns, no auth_comp_id): 130 residues, pLDDT from B factors', () => {
    const m = models.COLABFOLD;
    const t = text(COLABFOLD);
    expect(t.includes('_atom_site.auth_comp_id')).toBe(false);
    expect(t.split('\n').filter((l) => l.startsWith('ATOM')).length).toBe(1069);
    const b = cifCaB(t, 14);
    expect(b.length).toBe(130);
    expect(m.sequence.length).toBe(130);
    expect(m.sequence.startsWith('CPSGWVGFSDNCYQWNSQKL')).toBe(true);
    expect(m.modelId).toBe('ERR550519_2213899_unrelaxed_model_1');
    expect(m.bFactors).toEqual(b);
    expect(m.plddtSource).toBe('b_factor');
    expect(m.globalPlddt).toBeNull();
    expect(m.fragment).toBeNull();
    expect(round2(m.meanPlddt)).toBe(round2(avg(b)));
    expect(round2(m.meanPlddt)).toBe(90.92);
  });

  it('AlphaPulldown ModelCIF: columns read by name (B factor 18th of 19), 64 residues, local pLDDT = B factor', () => {
    const m = models.PULLDOWN;
    const t = text(PULLDOWN);
    const b = cifCaB(t, 17);
    expect(b.length).toBe(64);
    expect(m.modelId).toBe('TEST');
    expect(m.sequence).toBe('MESAIAEGGASRFSASSGGGGSRGAPQHYPKTAGNSEFLGKTPGQNAQKWIPARSTRRDDNSAA');
    expect(m.bFactors).toEqual(b);
    // "1 1 A 1 MET 4 48.990": ordinal, model, asym, seq, comp, metric 4 (local pLDDT), value
    const local = t
      .split('\n')
      .map((l) => /^\d+ 1 A \d+ [A-Z]{3} 4 ([\d.]+)$/.exec(l))
      .filter(Boolean)
      .map((x) => Number(x![1]));
    expect(local.length).toBe(64);
    expect(m.plddtSource).toBe('ma_qa_metric_local');
    expect(m.plddt).toEqual(local);
    expect(m.plddt).toEqual(m.bFactors);
    // ModelCIF from AlphaPulldown records the per-residue mean as its global pLDDT
    expect(m.globalPlddt).toBe(65.217);
    expect(Math.abs(m.meanPlddt - m.globalPlddt!)).toBeLessThan(0.001);
    expect(recordMeanPlddt(m)).toBe(65.22);
  });

  it('detects gzip by content, not by the extension', async () => {
    const disguised = join(tmp, 'AF-Q5VSL9-F1-model_v4.cif');
    copyFileSync(Q5VSL9, disguised);
    const m = await parseStructureModel(disguised);
    expect(m.sequence).toBe(models.Q5VSL9.sequence);
    expect(m.bytes.equals(models.Q5VSL9.bytes)).toBe(true);
  });
});

describe('structureRecords: mapping models to isoforms', () => {
  it('maps by sequence identity (whole protein and F3 fragment at 401..1800), lists the rest as unmapped', async () => {
    const f3 = models.F3.sequence;
    const proteins = new Map([
      ['ENST_TEST_STRIP1.1', models.Q5VSL9.sequence],
      ['ENST_TEST_SPEG.1', 'A'.repeat(400) + f3 + 'G'.repeat(50)],
      ['ENST_TEST_OTHER.1', 'MKTAYIAKQRQISFVKSHFSRQ'],
    ]);
    const { located, unmapped } = await structureRecords(
      [{ path: Q5VSL9 }, { path: F3 }, { path: PDB }, { path: COLABFOLD }],
      proteins,
      'AlphaFold DB v4',
    );
    expect(located.map((l) => [l.record.transcript_id, l.file, l.record.mean_plddt])).toEqual([
      ['ENST_TEST_STRIP1.1', Q5VSL9, 81.24],
      ['ENST_TEST_SPEG.1', F3, 69.32],
    ]);
    expect(unmapped).toEqual([PDB, COLABFOLD]);
    expect(located[0].record.model_source).toBe('AlphaFold DB v4');
    expect(located[0].record.mmcif!.equals(models.Q5VSL9.bytes)).toBe(true);
    // Per-residue pLDDT, placed on the protein: the fragment's first residue is position 401.
    expect(located[0].record.plddt_residues).toEqual({ start: 1, values: models.Q5VSL9.plddt });
    expect(located[1].record.plddt_residues?.start).toBe(401);
    expect(located[1].record.plddt_residues?.values).toHaveLength(1400);
  });

  it('a fragment at the wrong offset does not map', async () => {
    const proteins = new Map([['ENST_TEST_SPEG.1', 'A'.repeat(399) + models.F3.sequence + 'G'.repeat(50)]]);
    const { located, unmapped } = await structureRecords([{ path: F3 }], proteins, 'AFDB');
    expect(located).toEqual([]);
    expect(unmapped).toEqual([F3]);
  });

  it('a whole-protein match beats a fragment for the same isoform; F<n> offset without DBREF', async () => {
    const THREE: Record<string, string> = { G: 'GLY', M: 'MET', K: 'LYS', V: 'VAL', L: 'LEU' };
    const writePdb = (name: string, seq: string) => {
      const atoms = [...seq].map(
        (aa, i) =>
          'ATOM  ' +
          String(i + 1).padStart(5) +
          '  CA  ' +
          THREE[aa] +
          ' A' +
          String(i + 1).padStart(4) +
          '    ' +
          '   0.000   0.000   0.000  1.00' +
          (50 + (i % 10)).toFixed(2).padStart(6) +
          '           C',
      );
      const path = join(tmp, name);
      writeFileSync(path, ['HEADER    TEST', ...atoms, 'END', ''].join('\n'));
      return path;
    };
    const protein = 'G'.repeat(400) + 'MKVL';
    const fragment = writePdb('AF-TEST-F3-model_v4.pdb', 'MKVL');
    const whole = writePdb('whole.pdb', protein);
    expect((await parseStructureModel(fragment)).fragment).toEqual({ index: 3, uniprotStart: 401, uniprotEnd: 404 });
    const proteins = new Map([['ENST_X.1', protein]]);
    const alone = await structureRecords([{ path: fragment }], proteins, 'test');
    expect(alone.located.map((l) => l.record.transcript_id)).toEqual(['ENST_X.1']);
    const both = await structureRecords([{ path: fragment }, { path: whole }], proteins, 'test');
    expect(both.located.map((l) => l.file)).toEqual([whole]);
    expect(both.unmapped).toEqual([fragment]);
    expect(both.located[0].record.mean_plddt).toBe(round2(avg([...protein].map((_, i) => 50 + (i % 10)))));
  });

  it('reads a mapping file (paths relative to it); unknown columns warn; malformed rows name the line', async () => {
    const dir = mkdtempSync(join(tmp, 'map-'));
    copyFileSync(PULLDOWN, join(dir, 'ranked_0.cif'));
    const mapping = join(dir, 'models.tsv');
    writeFileSync(mapping, 'model_file\ttranscript_id\tnote\nranked_0.cif\tENST_TEST_OTHER.1\tpulldown\n');
    const { models: refs, warnings } = await readStructureMapping(mapping);
    expect(refs).toEqual([
      { path: join(dir, 'ranked_0.cif'), transcriptId: 'ENST_TEST_OTHER.1', file: mapping, line: 2 },
    ]);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toContain('note');
    const { located, unmapped } = await structureRecords(refs, new Map(), 'AlphaPulldown 2.0.0b2');
    expect(unmapped).toEqual([]);
    expect(located).toHaveLength(1);
    expect(located[0]).toMatchObject({
      file: mapping,
      line: 2,
      record: { transcript_id: 'ENST_TEST_OTHER.1', mean_plddt: 65.22 },
    });

    const bad = join(dir, 'bad.tsv');
    writeFileSync(bad, 'model_file\ttranscript_id\nranked_0.cif\tENST_A.1\nranked_0.cif\n');
    const err = await expectInputError(readStructureMapping(bad));
    expect(err.file).toBe(bad);
    expect(err.line).toBe(3);
    // An empty transcript id means: map this model by its protein sequence.
    const empty = join(dir, 'empty-id.tsv');
    writeFileSync(empty, 'model_file\ttranscript_id\nranked_0.cif\t\n');
    expect((await readStructureMapping(empty)).models[0].transcriptId).toBeUndefined();
    const spaced = join(dir, 'spaced-id.tsv');
    writeFileSync(spaced, 'model_file\ttranscript_id\nranked_0.cif\tENST 1\n');
    const err2 = await expectInputError(readStructureMapping(spaced));
    expect([err2.line, err2.column]).toEqual([2, 'transcript_id']);
    const noHeader = join(dir, 'no-header.tsv');
    writeFileSync(noHeader, 'file\ttranscript\nranked_0.cif\tENST_A.1\n');
    expect((await expectInputError(readStructureMapping(noHeader))).line).toBe(1);
  });
});

describe('a model named for a transcript', () => {
  it('is checked against its protein: a whole-protein model starts at residue 1, an F3 fragment at 401', async () => {
    const protein = 'A'.repeat(400) + models.F3.sequence + 'G'.repeat(50);
    const proteins = new Map([
      ['ENST_TEST_SPEG.1', protein],
      ['ENST_TEST_STRIP1.1', models.Q5VSL9.sequence],
    ]);
    const { located } = await structureRecords(
      [
        { path: F3, transcriptId: 'ENST_TEST_SPEG.1', file: 'models.tsv', line: 2 },
        { path: Q5VSL9, transcriptId: 'ENST_TEST_STRIP1.1', file: 'models.tsv', line: 3 },
      ],
      proteins,
      'AFDB',
    );
    expect(located.map((l) => [l.record.transcript_id, l.record.plddt_residues!.start])).toEqual([
      ['ENST_TEST_SPEG.1', 401],
      ['ENST_TEST_STRIP1.1', 1],
    ]);
  });

  it('refuses a model that is not the named protein (or its fragment window), naming the mapping line', async () => {
    // A 432-aa model named on an 837-aa isoform: its per-residue pLDDT would land on other residues.
    const pulldown = await parseStructureModel(PULLDOWN);
    const other = 'M' + 'K'.repeat(836);
    const err = await expectInputError(
      structureRecords(
        [{ path: PULLDOWN, transcriptId: 'ENST_TEST_OTHER.1', file: 'models.tsv', line: 2 }],
        new Map([['ENST_TEST_OTHER.1', other]]),
        'test',
      ),
    );
    expect([err.file, err.line, err.column]).toEqual(['models.tsv', 2, 'transcript_id']);
    expect(err.message).toContain(`(${pulldown.sequence.length} aa) is not the protein of ENST_TEST_OTHER.1 (837 aa)`);
    // A fragment one residue off its window is refused too, with the window named.
    const shifted = new Map([['ENST_TEST_SPEG.1', 'A'.repeat(399) + models.F3.sequence + 'G'.repeat(50)]]);
    const err2 = await expectInputError(
      structureRecords([{ path: F3, transcriptId: 'ENST_TEST_SPEG.1', file: 'models.tsv', line: 5 }], shifted, 'test'),
    );
    expect(err2.message).toMatch(/nor its residues 401–1800 \(the model's fragment F3\)/);
  });
});

describe('insertTrack with native structure records', () => {
  it('inserts structures rows with the stored mean pLDDT and the model bytes', async () => {
    const proteins = new Map([
      ['ENST_TEST_STRIP1.1', models.Q5VSL9.sequence],
      ['ENST_TEST_SPEG.1', 'A'.repeat(400) + models.F3.sequence + 'G'.repeat(50)],
      ['ENST_TEST_OTHER.1', 'MKTAYIAKQRQISFVKSHFSRQ'],
    ]);
    const db = miniRelease(Object.fromEntries(proteins));

    const { located, unmapped } = await structureRecords(
      [{ path: Q5VSL9 }, { path: F3 }, { path: COLABFOLD }],
      proteins,
      'AlphaFold DB v4',
    );
    expect(unmapped).toEqual([COLABFOLD]);
    const listing = join(tmp, 'structures-input.txt'); // the input recorded in track_sources
    writeFileSync(listing, [Q5VSL9, F3, COLABFOLD].join('\n'));
    const n = await insertTrack(
      db,
      { track: 'structures', file: listing, source: 'AlphaFold DB', version: 'v4', generated: false },
      located,
    );
    expect(n).toBe(2);
    const rows = db
      .prepare(
        'SELECT transcript_id, model_source, mean_plddt, mmcif, mmcif_sha256, provenance FROM structures ORDER BY transcript_id',
      )
      .all() as {
      transcript_id: string;
      model_source: string;
      mean_plddt: number;
      mmcif: Buffer;
      mmcif_sha256: string;
      provenance: string;
    }[];
    expect(rows.map((r) => [r.transcript_id, r.mean_plddt, r.provenance])).toEqual([
      ['ENST_TEST_SPEG.1', 69.32, 'real'],
      ['ENST_TEST_STRIP1.1', 81.24, 'real'],
    ]);
    expect(Buffer.from(rows[1].mmcif).equals(gunzipSync(readFileSync(Q5VSL9)))).toBe(true);
    expect(Buffer.from(rows[0].mmcif).toString('utf8').startsWith('data_AF-Q15772-F3')).toBe(true);
    const metrics = db.prepare('SELECT transcript_id, plddt FROM isoform_metrics ORDER BY transcript_id').all();
    expect(metrics).toEqual([
      { transcript_id: 'ENST_TEST_OTHER.1', plddt: null },
      { transcript_id: 'ENST_TEST_SPEG.1', plddt: 69.32 },
      { transcript_id: 'ENST_TEST_STRIP1.1', plddt: 81.24 },
    ]);
    db.close();
  });

  it('an explicit mapping to an unknown transcript fails in insertTrack naming the mapping file and line', async () => {
    const db = miniRelease({});
    const dir = mkdtempSync(join(tmp, 'map-'));
    const mapping = join(dir, 'models.tsv');
    writeFileSync(mapping, `model_file\ttranscript_id\n${PULLDOWN}\tENST_NOPE.1\n`);
    const { models: refs } = await readStructureMapping(mapping);
    const { located } = await structureRecords(refs, new Map(), 'AlphaPulldown');
    const err = await expectInputError(
      insertTrack(db, { track: 'structures', file: mapping, source: 'AlphaPulldown', generated: false }, located),
    );
    expect([err.file, err.line, err.column]).toEqual([mapping, 2, 'transcript_id']);
    db.close();
  });
});

describe('malformed model files', () => {
  const cifLines = () => text(Q5VSL9).split('\n');

  it('a cif truncated before _atom_site → InputError naming the file and the _atom_site column', async () => {
    const path = join(tmp, 'truncated-header.cif');
    writeFileSync(path, cifLines().slice(0, 2000).join('\n') + '\n');
    const err = await expectInputError(parseStructureModel(path));
    expect(err.file).toBe(path);
    expect(err.column).toBe('_atom_site');
    expect(err.line).toBe(2001);
    expect(err.message).toContain('no _atom_site loop');
  });

  it('a cif truncated in the middle of an _atom_site row → InputError at that line', async () => {
    const lines = cifLines();
    const path = join(tmp, 'truncated-atoms.cif');
    // keep 5000 lines and half of line 5001 (an ATOM row of 23 values)
    const cut = lines[5000].slice(0, 40);
    expect(cut.startsWith('ATOM')).toBe(true);
    writeFileSync(path, [...lines.slice(0, 5000), cut].join('\n'));
    const err = await expectInputError(parseStructureModel(path));
    expect(err.file).toBe(path);
    expect(err.line).toBe(5001);
    expect(err.message).toContain('incomplete row');
  });

  it('a truncated gzip file → InputError naming the file', async () => {
    const path = join(tmp, 'truncated.cif.gz');
    const raw = readFileSync(F3);
    writeFileSync(path, raw.subarray(0, raw.length >> 1));
    const err = await expectInputError(parseStructureModel(path));
    expect(err.file).toBe(path);
    expect(err.message).toContain('gzip');
  });

  it('a non-numeric B_iso_or_equiv → InputError naming the line and the column', async () => {
    const lines = text(PULLDOWN).split('\n');
    const idx = lines.findIndex((l) => l.startsWith('ATOM 6 '));
    lines[idx] = lines[idx].replace(/ ([\d.]+) 1$/, ' n/a 1');
    expect(lines[idx]).toMatch(/ n\/a 1$/);
    const path = join(tmp, 'bad-b.cif');
    writeFileSync(path, lines.join('\n'));
    const err = await expectInputError(parseStructureModel(path));
    expect([err.file, err.line, err.column]).toEqual([path, idx + 1, 'B_iso_or_equiv']);
  });

  it('an mmCIF without CA atoms → InputError naming the _atom_site loop', async () => {
    const lines = text(COLABFOLD).split('\n');
    const path = join(tmp, 'no-ca.cif');
    writeFileSync(path, lines.filter((l) => !/^ATOM\s+\d+\s+C\s+CA\s/.test(l)).join('\n'));
    const err = await expectInputError(parseStructureModel(path));
    expect(err.file).toBe(path);
    // the loop_ keyword is on the line before _atom_site.group_PDB
    expect(err.line).toBe(lines.findIndex((l) => l.startsWith('_atom_site.group_PDB')));
    expect(err.column).toBe('label_atom_id');
  });

  it('a PDB with a bad B factor → InputError naming the line and the column', async () => {
    const lines = text(PDB).split('\n');
    // biome-ignore lint/complexity/noAdjacentSpacesInRegex: a PDB ATOM line's fixed columns, spaces included.
    const idx = lines.findIndex((l) => /^ATOM.{8} CA  ... A   5 /.test(l));
    expect(idx).toBeGreaterThan(0);
    lines[idx] = lines[idx].slice(0, 60) + ' xx.xx' + lines[idx].slice(66);
    const path = join(tmp, 'bad-b.pdb');
    writeFileSync(path, lines.join('\n'));
    const err = await expectInputError(parseStructureModel(path));
    expect([err.file, err.line, err.column]).toEqual([path, idx + 1, 'B-factor']);
    expect(err.message).toContain(`${path}:${idx + 1}`);
  });

  it('a file that is neither mmCIF nor PDB → InputError', async () => {
    const path = join(tmp, 'notes.txt');
    writeFileSync(path, 'hello\n');
    expect((await expectInputError(parseStructureModel(path))).file).toBe(path);
  });
});
