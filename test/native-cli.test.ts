// The native importers through the CLI, on a copy of the demo release: HMMER domtblout mapped by an
// id file, and a structure model mapped by protein sequence identity.
import { beforeAll, expect, it } from 'vitest';
import Database from 'better-sqlite3';
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fixtureReleaseCopy } from './helpers/fixture-copy.js';
import { runCli } from './helpers/run.js';

const FIXTURES = join(__dirname, 'fixtures/native');
let dir: string;
let db: string;
const isoatlas = (...args: string[]) => runCli(args);

const copy = fixtureReleaseCopy('native-cli');
beforeAll(() => {
  dir = copy.dir();
  db = copy.db();
});

it('imports Pfam domains from domtblout through an id mapping, as real records', async () => {
  const domtblout = join(FIXTURES, 'domains/transdecoder_cufflinks_example_pfam.domtblout');
  const first = readFileSync(domtblout, 'utf8')
    .split('\n')
    .find((l) => l && !l.startsWith('#'))!
    .split(/\s+/);
  writeFileSync(join(dir, 'map.tsv'), `id\ttranscript_id\n${first[3]}\tENST00000006251.11\n`);
  const r = await isoatlas(
    'import',
    'pfam',
    '--db',
    db,
    '--file',
    domtblout,
    '--mapping',
    join(dir, 'map.tsv'),
    '--version',
    '37.0',
  );
  expect(r.status, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/imported \d+ domains records .*237 hits, 134 above the i-Evalue cut-off/);
  const d = new Database(db, { readonly: true });
  const rows = d
    .prepare(
      "SELECT accession, start, end, provenance FROM domains WHERE transcript_id = 'ENST00000006251.11' AND provenance = 'real'",
    )
    .all();
  expect(rows).toContainEqual({
    accession: first[1].replace(/\.\d+$/, ''),
    start: Number(first[19]),
    end: Number(first[20]),
    provenance: 'real',
  });
  expect(
    d
      .prepare(
        "SELECT generated, version FROM track_sources WHERE input_file = 'transdecoder_cufflinks_example_pfam.domtblout'",
      )
      .get(),
  ).toEqual({ generated: 0, version: '37.0' });
  d.close();
});

it('imports a structure model mapped by protein sequence identity', async () => {
  // A PDB model of PRR5-201's real protein: one CA per residue, pLDDT 70 throughout.
  const d = new Database(db, { readonly: true });
  const protein = d
    .prepare("SELECT protein_sequence FROM isoforms WHERE transcript_id = 'ENST00000006251.11'")
    .pluck()
    .get() as string;
  d.close();
  const three: Record<string, string> = {
    A: 'ALA',
    R: 'ARG',
    N: 'ASN',
    D: 'ASP',
    C: 'CYS',
    Q: 'GLN',
    E: 'GLU',
    G: 'GLY',
    H: 'HIS',
    I: 'ILE',
    L: 'LEU',
    K: 'LYS',
    M: 'MET',
    F: 'PHE',
    P: 'PRO',
    S: 'SER',
    T: 'THR',
    W: 'TRP',
    Y: 'TYR',
    V: 'VAL',
  };
  const atoms = [...protein].map(
    (aa, i) =>
      `ATOM  ${String(i + 1).padStart(5)}  CA  ${three[aa]} A${String(i + 1).padStart(4)}    ${(i * 3.8).toFixed(3).padStart(8)}${'0.000'.padStart(8)}${'0.000'.padStart(8)}  1.00 70.00           C`,
  );
  writeFileSync(join(dir, 'model.pdb'), `${atoms.join('\n')}\nEND\n`);
  writeFileSync(join(dir, 'models.tsv'), 'model_file\nmodel.pdb\n');
  const r = await isoatlas(
    'import',
    'models',
    '--db',
    db,
    '--mapping',
    join(dir, 'models.tsv'),
    '--source',
    'test model',
  );
  expect(r.status, r.stderr).toBe(0);
  const s = new Database(db, { readonly: true });
  const mapped = s
    .prepare("SELECT transcript_id, mean_plddt, provenance FROM structures WHERE model_source = 'test model'")
    .all() as { transcript_id: string }[];
  s.close();
  // Every isoform with exactly this protein gets the model, PRR5-201 among them.
  expect(mapped.map((m) => m.transcript_id)).toContain('ENST00000006251.11');
  expect(mapped[0]).toMatchObject({ mean_plddt: 70, provenance: 'real' });
});

it('imports pVACseq aggregated results mapped by transcript id, and TED per-method choppings', async () => {
  const agg = await isoatlas(
    'import',
    'pvacseq',
    '--db',
    db,
    '--format',
    'aggregated',
    '--file',
    join(FIXTURES, 'neoantigens/pvacseq_Test.MHC_I.all_epitopes.aggregated.tsv'),
  );
  expect(agg.status, agg.stderr).toBe(0);
  const imported = Number(/imported (\d+) neoantigens records/.exec(agg.stderr)?.[1]);
  expect(imported).toBeGreaterThan(0);

  // Map every TED model to the longest protein of the demo so that every chopping fits in it.
  const d = new Database(db, { readonly: true });
  const longest = d
    .prepare('SELECT transcript_id FROM isoforms WHERE coding = 1 ORDER BY protein_length DESC LIMIT 1')
    .pluck()
    .get() as string;
  const before = d
    .prepare("SELECT count(*) FROM domains WHERE transcript_id = ? AND provenance = 'real'")
    .pluck()
    .get(longest) as number;
  d.close();
  const chopping = join(FIXTURES, 'domains/ted_chopping_merizo.txt');
  const ids = [
    ...new Set(
      readFileSync(chopping, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => l.split('\t')[0]),
    ),
  ];
  writeFileSync(join(dir, 'ted-map.tsv'), `id\ttranscript_id\n${ids.map((id) => `${id}\t${longest}`).join('\n')}\n`);
  const ted = await isoatlas(
    'import',
    'ted',
    '--db',
    db,
    '--file',
    chopping,
    '--method',
    'merizo',
    '--mapping',
    join(dir, 'ted-map.tsv'),
    '--source',
    'TED (Merizo)',
  );
  expect(ted.status, ted.stderr).toBe(0);
  const n = Number(/imported (\d+) domains records/.exec(ted.stderr)?.[1]);
  expect(n).toBe(14); // the Merizo file's domains (the importer's test counts them from the file)
  const after = new Database(db, { readonly: true });
  expect(
    after.prepare("SELECT count(*) FROM domains WHERE transcript_id = ? AND provenance = 'real'").pluck().get(longest),
  ).toBe(before + 14);
  after.close();
});

it('prints its version, and marks required options in help', async () => {
  const version = await isoatlas('--version');
  expect(version.status).toBe(0);
  expect(version.stdout.trim()).toBe(
    (JSON.parse(readFileSync(join(__dirname, '..', 'package.json'), 'utf8')) as { version: string }).version,
  );
  const help = await isoatlas('import', 'core', '--help');
  expect(help.status).toBe(0);
  expect(help.stdout).toMatch(/--config <file>[\s\S]*\(required\)/);
  // Up to the next option: the logging options widen the column, so a description may wrap.
  expect(help.stdout).toMatch(/--out <db>[^-]*\(required\)/);
});
