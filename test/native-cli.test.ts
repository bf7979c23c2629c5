// The native importers through the CLI, on a copy of the demo release: HMMER domtblout mapped by an
// id file, and a structure model mapped by protein sequence identity.
import { afterAll, beforeAll, expect, inject, it } from 'vitest';
import Database from 'better-sqlite3';
import { spawnSync } from 'node:child_process';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const ROOT = join(__dirname, '..');
const FIXTURES = join(__dirname, 'fixtures/native');
let dir: string;
let db: string;
const isoatlas = (...args: string[]) => spawnSync(process.execPath, [join(ROOT, 'bin/isoatlas.mjs'), ...args], { encoding: 'utf8' });

beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-native-cli-'));
  db = join(dir, 'release.sqlite');
  copyFileSync(inject('demoDb'), db);
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

it('imports Pfam domains from domtblout through an id mapping, as real records', () => {
  const domtblout = join(FIXTURES, 'domains/transdecoder_cufflinks_example_pfam.domtblout');
  const first = readFileSync(domtblout, 'utf8').split('\n').find((l) => l && !l.startsWith('#'))!.split(/\s+/);
  writeFileSync(join(dir, 'map.tsv'), `id\ttranscript_id\n${first[3]}\tENST00000006251.11\n`);
  const r = isoatlas('import', 'pfam', '--db', db, '--file', domtblout, '--mapping', join(dir, 'map.tsv'), '--version', '37.0');
  expect(r.status, r.stderr).toBe(0);
  expect(r.stderr).toMatch(/imported \d+ domains records .*237 hits, 134 above the i-Evalue cut-off/);
  const d = new Database(db, { readonly: true });
  const rows = d.prepare("SELECT accession, start, end, provenance FROM domains WHERE transcript_id = 'ENST00000006251.11' AND provenance = 'real'").all();
  expect(rows).toContainEqual({ accession: first[1].replace(/\.\d+$/, ''), start: Number(first[19]), end: Number(first[20]), provenance: 'real' });
  expect(d.prepare("SELECT generated, version FROM track_sources WHERE input_file = 'transdecoder_cufflinks_example_pfam.domtblout'").get()).toEqual({ generated: 0, version: '37.0' });
  d.close();
});

it('imports a structure model mapped by protein sequence identity', () => {
  // A PDB model of PRR5-201's real protein: one CA per residue, pLDDT 70 throughout.
  const d = new Database(db, { readonly: true });
  const protein = d.prepare("SELECT protein_sequence FROM isoforms WHERE transcript_id = 'ENST00000006251.11'").pluck().get() as string;
  d.close();
  const three: Record<string, string> = { A: 'ALA', R: 'ARG', N: 'ASN', D: 'ASP', C: 'CYS', Q: 'GLN', E: 'GLU', G: 'GLY', H: 'HIS', I: 'ILE', L: 'LEU', K: 'LYS', M: 'MET', F: 'PHE', P: 'PRO', S: 'SER', T: 'THR', W: 'TRP', Y: 'TYR', V: 'VAL' };
  const atoms = [...protein].map((aa, i) =>
    `ATOM  ${String(i + 1).padStart(5)}  CA  ${three[aa]} A${String(i + 1).padStart(4)}    ${(i * 3.8).toFixed(3).padStart(8)}${'0.000'.padStart(8)}${'0.000'.padStart(8)}  1.00 70.00           C`,
  );
  writeFileSync(join(dir, 'model.pdb'), `${atoms.join('\n')}\nEND\n`);
  writeFileSync(join(dir, 'models.tsv'), 'model_file\nmodel.pdb\n');
  const r = isoatlas('import', 'models', '--db', db, '--mapping', join(dir, 'models.tsv'), '--source', 'test model');
  expect(r.status, r.stderr).toBe(0);
  const s = new Database(db, { readonly: true });
  const mapped = s.prepare("SELECT transcript_id, mean_plddt, provenance FROM structures WHERE model_source = 'test model'").all() as { transcript_id: string }[];
  s.close();
  // Every isoform with exactly this protein gets the model, PRR5-201 among them.
  expect(mapped.map((m) => m.transcript_id)).toContain('ENST00000006251.11');
  expect(mapped[0]).toMatchObject({ mean_plddt: 70, provenance: 'real' });
});
