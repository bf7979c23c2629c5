// Replacing and removing a track through the CLI, on a copy of the demo release: a corrected input
// replaces what its earlier import added and nothing else, a removal takes a track's records away,
// and the metrics (a view over the track tables) follow.
import { beforeAll, describe, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureReleaseCopy } from './helpers/fixture-copy.js';
import { runCli } from './helpers/run.js';

const isoatlas = (...args: string[]) => runCli(args);
let dir: string;
let db: string;
const query = <T>(sql: string, ...params: unknown[]) => {
  const d = new Database(db, { readonly: true });
  try {
    return d.prepare(sql).all(...params) as T[];
  } finally {
    d.close();
  }
};

const copy = fixtureReleaseCopy('track-replace');
beforeAll(() => {
  dir = copy.dir();
  db = copy.db();
});

describe('import track --replace and remove-track', () => {
  it('replaces the records of an earlier input of the same name, leaves the other inputs alone, and the metrics follow', async () => {
    const before = query<{ input_file: string; n: number }>(
      'SELECT input_file, count(*) AS n FROM neoantigens GROUP BY 1 ORDER BY 1',
    );
    expect(before.map((r) => r.input_file)).toEqual(['neoantigens.tsv', 'pvacseq_Test.MHC_I.all_epitopes.tsv.gz']);
    // A corrected neoantigens.tsv: two peptides of MAPK1-201's protein.
    const protein = query<{ p: string }>(
      "SELECT protein_sequence AS p FROM isoforms WHERE transcript_id = 'ENST00000215832.11'",
    )[0].p;
    mkdirSync(join(dir, 'corrected'));
    const file = join(dir, 'corrected/neoantigens.tsv');
    writeFileSync(
      file,
      `transcript_id\tpeptide\tallele\taffinity_nm\tstart\nENST00000215832.11\t${protein.slice(9, 18)}\tHLA-A*02:01\t50\t10\nENST00000215832.11\t${protein.slice(99, 108)}\tHLA-A*02:01\t80\t100\n`,
    );

    const refused = await isoatlas(
      'import',
      'track',
      'neoantigens',
      '--db',
      db,
      '--file',
      file,
      '--source',
      'fixed',
      '--generated',
    );
    expect(refused.status).toBe(3);
    expect(refused.stderr).toContain(
      'neoantigens.tsv was already imported as the neoantigens track of this release: import it with --replace',
    );

    const r = await isoatlas(
      'import',
      'track',
      'neoantigens',
      '--db',
      db,
      '--file',
      file,
      '--source',
      'fixed',
      '--generated',
      '--replace',
    );
    expect(r.status, r.stderr).toBe(0);
    const after = query<{ input_file: string; n: number }>(
      'SELECT input_file, count(*) AS n FROM neoantigens GROUP BY 1 ORDER BY 1',
    );
    expect(after).toEqual([{ input_file: 'neoantigens.tsv', n: 2 }, before[1]]);
    expect(query("SELECT source, records FROM track_sources WHERE track = 'neoantigens' ORDER BY input_file")).toEqual([
      { source: 'fixed', records: 2 },
      { source: expect.stringMatching(/^pVACseq/), records: before[1].n },
    ]);
    const metric = (id: string) =>
      query<{ n: number | null }>('SELECT neoantigens AS n FROM isoform_metrics WHERE transcript_id = ?', id)[0].n;
    const realOnMapk1 = query<{ n: number }>(
      "SELECT count(*) AS n FROM neoantigens WHERE transcript_id = 'ENST00000215832.11' AND input_file <> 'neoantigens.tsv'",
    )[0].n;
    expect(metric('ENST00000215832.11')).toBe(2 + realOnMapk1);
  });

  it('removes one input of a track, then the whole track (metrics become null: no track), and says what a missing input is', async () => {
    const one = await isoatlas('remove-track', 'neoantigens', '--db', db, '--input', 'neoantigens.tsv');
    expect(one.status, one.stderr).toBe(0);
    expect(one.stderr).toContain('removed 2 neoantigens records (neoantigens.tsv)');
    expect(query('SELECT DISTINCT input_file FROM neoantigens')).toEqual([
      { input_file: 'pvacseq_Test.MHC_I.all_epitopes.tsv.gz' },
    ]);

    const missing = await isoatlas('remove-track', 'neoantigens', '--db', db, '--input', 'nope.tsv');
    expect(missing.status).toBe(2);
    expect(missing.stderr).toContain('has no input named nope.tsv; its inputs: pvacseq_Test.MHC_I.all_epitopes.tsv.gz');

    const all = await isoatlas('remove-track', 'neoantigens', '--db', db);
    expect(all.status, all.stderr).toBe(0);
    expect(query('SELECT count(*) AS n FROM neoantigens')).toEqual([{ n: 0 }]);
    expect(query('SELECT count(*) AS n FROM isoform_metrics WHERE neoantigens IS NOT NULL')).toEqual([{ n: 0 }]);
    // Other tracks are untouched.
    expect(query<{ n: number }>('SELECT count(*) AS n FROM domains')[0].n).toBeGreaterThan(0);
  });
});
