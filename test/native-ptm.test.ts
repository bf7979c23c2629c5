import { describe, it, expect, inject, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { DDL } from '../build/release-db/schema.js';
import { InputError } from '../build/import/input.js';
import { insertTrack } from '../build/import/tracks.js';
import { parseCsvRecord, readPtmPose, releaseProteins, transferPtmSites } from '../build/import/native/ptm.js';

const FILE = join(import.meta.dirname, 'fixtures', 'native', 'ptm', 'ptm_pose_spliced_ptms.csv');

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'isoatlas-native-ptm-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

describe('CSV records', () => {
  it('splits RFC 4180 quoted fields', () => {
    expect(parseCsvRecord('a,"b, c",,"say ""hi""",e')).toEqual(['a', 'b, c', '', 'say "hi"', 'e']);
    expect(parseCsvRecord('a,"open')).toBeNull();
    expect(parseCsvRecord('')).toEqual(['']);
  });

  it('keeps quoted commas of the real file inside their field', () => {
    const lines = readFileSync(FILE, 'utf8').split('\n');
    const header = parseCsvRecord(lines[0]!)!;
    expect(header).toHaveLength(29);
    const row = parseCsvRecord(lines[147]!)!; // line 148: CEACAM1, quoted PSP fields with commas
    expect(row).toHaveLength(29);
    expect(lines[147]!.split(',').length).toBeGreaterThan(29);
    expect(row[header.indexOf('Gene')]).toBe('CEACAM1');
    expect(row[header.indexOf('PSP:ON_PROCESS')]).toBe('apoptosis, altered');
    expect(row[header.indexOf('PSP:ON_FUNCTION')]).toBe('activity, inhibited');
  });
});

describe('readPtmPose', () => {
  it('reads the 634 rows into sites, one per gene, position and modification', async () => {
    const { sites, rows, duplicates } = await readPtmPose(FILE);
    expect(rows).toBe(634);
    // 668 row × modification pairs (`;`-joined modifications split), 523 distinct
    expect(sites.length + duplicates).toBe(668);
    expect(sites).toHaveLength(523);
    expect(sites[0]).toEqual({
      file: FILE,
      line: 2,
      record: {
        gene: 'ARHGAP17',
        accession: 'Q68EM7',
        residue: 'S',
        position: 575,
        modification: 'Phosphoserine',
        modificationClass: 'Phosphorylation',
      },
    });
    // a row with two modifications gives two sites on the same line
    const split = sites.filter((s, _, all) => all.filter((t) => t.line === s.line).length > 1);
    expect(split.length).toBeGreaterThan(0);
    const line = split[0]!.line;
    const raw = parseCsvRecord(readFileSync(FILE, 'utf8').split('\n')[line! - 1]!)!;
    expect(split.filter((s) => s.line === line).map((s) => s.record.modification)).toEqual(raw[10]!.split(';'));
    expect(split[0]!.record.modificationClass).toBeNull(); // PTM-POSE repeats such rows once per class
  });

  it('a missing required column is an InputError naming it', async () => {
    const text = readFileSync(FILE, 'utf8').replace('PTM Position in Canonical Isoform', 'Position');
    const file = join(tmp, 'renamed.csv');
    writeFileSync(file, text);
    const err = await readPtmPose(file).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(InputError);
    expect((err as InputError).message).toMatch(/missing required column\(s\): PTM Position in Canonical Isoform/);
  });
});

/** Deterministic made-up protein without S, so only the residues we place are serines. */
function madeUpProtein(length: number): string[] {
  const letters = 'ACDEFGHIKLMNPQRTVWY';
  let x = 12345;
  return Array.from({ length }, () => {
    x = (x * 1103515245 + 12345) % 2147483648;
    return letters[x % letters.length]!;
  });
}

describe('transfer onto a tiny release', () => {
  // ARHGAP17 (made-up sequence): the file has S575, S570, S560, S553, S547 and S520 on Q68EM7.
  const residues = madeUpProtein(600);
  for (const p of [575, 570, 560, 553, 520]) residues[p - 1] = 'S';
  residues[547 - 1] = 'A'; // S547 does not match the canonical protein → skipped
  const canonical = residues.join('');
  const shifted = 'MKTEWQ' + canonical.slice(40); // positions move by 6 − 40 = −34
  const truncated = canonical.slice(0, 540); // only S520's window survives
  const repeated = canonical.slice(560, 590) + canonical.slice(560, 590); // S570 and S575 windows twice

  function buildDb(): Database.Database {
    const db = new Database(':memory:');
    db.exec(DDL);
    const iso =
      db.prepare(`INSERT INTO isoforms (transcript_id, transcript_id_unversioned, transcript_name, transcript_name_source, gene_id, source,
      chromosome, strand, start, end, length, exon_count, coding, protein_length, protein_sequence)
      VALUES (?, ?, ?, 'generated', 'ENSG99999999999', 'reference', 'chr16', '-', 1000, 9000, 3000, 10, ?, ?, ?)`);
    const add = (n: number, seq: string | null) =>
      iso.run(`ENST9999999990${n}.1`, `ENST9999999990${n}`, `ARHGAP17-${n}`, seq ? 1 : 0, seq?.length ?? null, seq);
    const gene =
      db.prepare(`INSERT INTO genes (gene_id, symbol, source, chromosome, strand, start, end, canonical_transcript_id, canonical_rule)
      VALUES ('ENSG99999999999', 'ARHGAP17', 'reference', 'chr16', '-', 1000, 9000, 'ENST99999999901.1', 'MANE_Select')`);
    db.transaction(() => {
      gene.run();
      add(1, canonical);
      add(2, shifted);
      add(3, truncated);
      add(4, repeated);
      add(5, null); // non-coding: not a target
    })();
    return db;
  }

  it('transfers sites by a unique ±7 window, skips residue mismatches, and inserts through insertTrack', async () => {
    const db = buildDb();
    try {
      const { sites } = await readPtmPose(FILE);
      const { canonical: canonicalOf, isoforms } = releaseProteins(db);
      expect(canonicalOf('arhgap17')!.transcript_id).toBe('ENST99999999901.1');
      expect(isoforms('ARHGAP17').map((i) => i.transcript_id)).toEqual([
        'ENST99999999901.1',
        'ENST99999999902.1',
        'ENST99999999903.1',
        'ENST99999999904.1',
      ]);
      const { located, skipped } = transferPtmSites(sites, canonicalOf, isoforms);
      expect(skipped).toEqual({
        gene_not_in_release: 523 - 6,
        residue_mismatch: 1,
        window_absent: 4 + 3,
        window_repeated: 2,
      });
      const got = located.map((l) => `${l.record.transcript_id}:${l.record.residue}${l.record.position}`).sort();
      expect(got).toEqual(
        [
          ...[575, 570, 560, 553, 520].map((p) => `ENST99999999901.1:S${p}`),
          ...[575, 570, 560, 553, 520].map((p) => `ENST99999999902.1:S${p - 34}`),
          'ENST99999999903.1:S520',
        ].sort(),
      );
      expect(
        located.every(
          (l) => l.record.source === 'PTM-POSE' && l.record.modification === 'Phosphoserine' && l.file === FILE,
        ),
      ).toBe(true);
      // the transferred position carries the same residue and neighbourhood
      for (const l of located) {
        const seq = { 'ENST99999999901.1': canonical, 'ENST99999999902.1': shifted, 'ENST99999999903.1': truncated }[
          l.record.transcript_id
        ]!;
        expect(seq[l.record.position - 1]).toBe('S');
      }
      expect(
        located.find((l) => l.record.transcript_id === 'ENST99999999902.1' && l.record.position === 541)!.line,
      ).toBe(2);

      const n = await insertTrack(db, { track: 'ptm', file: FILE, source: 'PTM-POSE', generated: false }, located);
      expect(n).toBe(11);
      const rows = db
        .prepare(
          `SELECT transcript_id, position, residue, modification, source, provenance FROM ptm_sites ORDER BY transcript_id, position`,
        )
        .all();
      expect(rows).toHaveLength(11);
      expect(rows[0]).toEqual({
        transcript_id: 'ENST99999999901.1',
        position: 520,
        residue: 'S',
        modification: 'Phosphoserine',
        source: 'PTM-POSE',
        provenance: 'real',
      });
    } finally {
      db.close();
    }
  });

  it('a transfer that lands on the wrong residue would be rejected by insertTrack', async () => {
    const db = buildDb();
    try {
      const bad = [
        {
          record: {
            transcript_id: 'ENST99999999902.1',
            position: 520,
            residue: 'S',
            modification: 'Phosphoserine',
            source: 'PTM-POSE',
          },
          file: FILE,
          line: 2,
        },
      ];
      await expect(
        insertTrack(db, { track: 'ptm', file: FILE, source: 'PTM-POSE', generated: false }, bad),
      ).rejects.toThrow(/not S/);
    } finally {
      db.close();
    }
  });
});

describe('real sites against the demo release', () => {
  it('accounts for every site, and refuses to place sites when the canonical isoforms differ', async () => {
    const demo = new Database(inject('fixtureDb'), { readonly: true, fileMustExist: true });
    try {
      const { sites } = await readPtmPose(FILE);
      const { canonical, isoforms } = releaseProteins(demo);
      const { located, skipped } = transferPtmSites(sites, canonical, isoforms);
      const inRelease = sites.filter((s) => canonical(s.record.gene) !== null).length;
      console.log(
        `PTM-POSE vs demo release: ${sites.length} sites, ${inRelease} in release genes, ${located.length} records`,
        skipped,
      );
      expect(skipped.gene_not_in_release).toBe(sites.length - inRelease);
      const onCanonical = located.filter(
        (l) => canonical(sites.find((s) => s.line === l.line)!.record.gene)!.transcript_id === l.record.transcript_id,
      ).length;
      expect(onCanonical + skipped.residue_mismatch).toBe(inRelease);
      // Only SMARCB1 K77 (Q12824-1; N6-acetyllysine and Ubiquitination) is on chr22. The release's
      // canonical SMARCB1 isoform (394 aa) is not UniProt's canonical Q12824-1 (385 aa), so its residue 77
      // is not K: the sites are skipped rather than placed on the wrong residue.
      expect(inRelease).toBe(2);
      expect(skipped.residue_mismatch).toBe(2);
      expect(located).toHaveLength(0);
    } finally {
      demo.close();
    }
  });
});
