// The core and track imports in bounded memory: a core import read and written in pages of a few
// rows (the natural-order sort of long reads then merges many runs) gives the same release as the
// default pages; the staging file beside the release is gone afterwards, whether the import worked
// or not; duplicates within a track input are found among the rows it inserted, not in memory; the
// natural order the long reads are merged in is that of localeCompare with the numeric option.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdirSync, mkdtempSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { importCore, loadCoreConfig } from '../build/import/core.js';
import { importTrack } from '../build/import/tracks.js';
import { InputError } from '../build/import/input.js';
import { updateReleaseDb } from '../build/release-db/database.js';
import { compareNatural } from '../build/release-db/records.js';
import { fixtureReleaseCopy } from './helpers/fixture-copy.js';

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-import-bounded-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const rows = (path: string, table: string) => {
  const db = new Database(path, { readonly: true });
  try {
    return db.prepare(`SELECT * FROM ${table} ORDER BY rowid`).all();
  } finally {
    db.close();
  }
};

describe('natural order of ids', () => {
  it('orders numbers by value, as localeCompare with the numeric option does', () => {
    const ids = ['PB.100.1', 'PB.10.2', 'PB.2.1', 'PB.10.10', 'PB.10.1', 'chr10', 'chr2', 'chrX', 'PB.1.1'];
    const sorted = [...ids].sort(compareNatural);
    expect(sorted).toEqual(['chr2', 'chr10', 'chrX', 'PB.1.1', 'PB.2.1', 'PB.10.1', 'PB.10.2', 'PB.10.10', 'PB.100.1']);
    expect(sorted).toEqual([...ids].sort((a, b) => a.localeCompare(b, 'en', { numeric: true })));
  });
});

describe('core import in pages', () => {
  it('gives the fixture release the same genes and isoforms in pages of 3 rows as in the default pages', async () => {
    // The fixture's inputs: a subset of the demo's, imported by the same pipeline.
    const out = join(dir, 'small-pages.sqlite');
    const summary = await importCore(
      loadCoreConfig(join(inject('fixtureWork'), 'inputs', 'release.config.json')),
      out,
      { batchRows: 3 },
    );
    const fixture = new Database(inject('fixtureDb'), { readonly: true });
    const count = (sql: string) => fixture.prepare(sql).pluck().get();
    expect(summary).toMatchObject({
      genes: count('SELECT count(*) FROM genes'),
      referenceIsoforms: count("SELECT count(*) FROM isoforms WHERE source = 'reference'"),
      longReadIsoforms: count("SELECT count(*) FROM isoforms WHERE source = 'long_read'"),
    });
    fixture.close();
    for (const table of ['genes', 'isoforms']) expect(rows(out, table)).toEqual(rows(inject('fixtureDb'), table));
    expect(readdirSync(dir)).toEqual(['small-pages.sqlite']); // the staging file is gone
  });

  it('leaves no staging file behind when an input is refused', async () => {
    const bad = join(dir, 'bad');
    rmSync(bad, { recursive: true, force: true });
    mkdirSync(bad);
    const gtf = join(bad, 'bad.gtf');
    writeFileSync(
      gtf,
      [
        'chr1\tHAVANA\ttranscript\t1\t100\t.\t+\t.\tgene_id "G1"; transcript_id "T1";',
        'chr1\tHAVANA\texon\t1\t60\t.\t+\t.\tgene_id "G1"; transcript_id "T1";',
        'chr1\tHAVANA\texon\t50\t100\t.\t+\t.\tgene_id "G1"; transcript_id "T1";',
      ].join('\n') + '\n',
    );
    const config = join(bad, 'release.config.json');
    writeFileSync(
      config,
      JSON.stringify({
        release: 'r1',
        date: '2026-01-01',
        title: 't',
        assembly: 'GRCh38',
        reference: { gtf: 'bad.gtf', source: 's' },
      }),
    );
    await expect(importCore(loadCoreConfig(config), join(bad, 'out.sqlite'), { batchRows: 1 })).rejects.toThrow(
      `${gtf}:2: transcript T1 has overlapping exons 1-60 and 50-100`,
    );
    expect(readdirSync(bad).sort()).toEqual(['bad.gtf', 'release.config.json']);
  });
});

describe('duplicates within a track input', () => {
  const copy = fixtureReleaseCopy('import-bounded');
  const write = (name: string, lines: string[]) => {
    const file = join(copy.dir(), name);
    writeFileSync(file, lines.join('\n') + '\n');
    return file;
  };
  const importInto = (track: 'ptm' | 'structures', file: string) =>
    updateReleaseDb(copy.db(), async (db) => {
      await importTrack(db, { track, file, source: 'test', generated: true });
    });
  const isoform = () => {
    const db = new Database(copy.db(), { readonly: true });
    try {
      return db
        .prepare(
          `SELECT transcript_id AS id, protein_sequence AS seq FROM isoforms
           WHERE coding = 1 AND protein_sequence LIKE '%S%'
             AND transcript_id NOT IN (SELECT transcript_id FROM structures) ORDER BY transcript_id LIMIT 1`,
        )
        .get() as { id: string; seq: string };
    } finally {
      db.close();
    }
  };

  it('refuses a PTM site listed twice in one input, at its second line, and accepts it again in another input', async () => {
    const { id, seq } = isoform();
    const position = seq.indexOf('S') + 1;
    const site = `${id}\t${position}\tS\tPhosphoserine`;
    const header = 'transcript_id\tposition\tresidue\tmodification';
    const twice = write('ptm-twice.tsv', [header, site, site]);
    const error = await importInto('ptm', twice).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(InputError);
    expect((error as InputError).message).toBe(
      `${twice}:3: column "position": duplicate site ${id} S${position} Phosphoserine`,
    );
    await importInto('ptm', write('ptm-once.tsv', [header, site]));
    await importInto('ptm', write('ptm-again.tsv', [header, site]));
    const sites = new Database(copy.db(), { readonly: true });
    expect(
      sites
        .prepare('SELECT input_file FROM ptm_sites WHERE transcript_id = ? AND position = ? ORDER BY input_file')
        .pluck()
        .all(id, position),
    ).toEqual(['ptm-again.tsv', 'ptm-once.tsv']);
    sites.close();
  });

  it('refuses a second structure of one isoform in one input', async () => {
    const { id } = isoform();
    const model = `${id}\thttps://example.org/structures/${id}.cif\t80\ttest`;
    const twice = write('structures-twice.tsv', ['transcript_id\tmodel_file\tmean_plddt\tmodel_source', model, model]);
    await expect(importInto('structures', twice)).rejects.toThrow(
      `${twice}:3: column "transcript_id": ${id} has more than one structure`,
    );
  });
});
