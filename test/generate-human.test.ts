// The synthetic human-scale generator at a small size, through the real import and build: the counts
// and shapes it is configured for, names the edge resolves, path-only structures, determinism, and
// every record marked generated. The full 62,000-gene run belongs to the benchmark, not here.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { createHash } from 'node:crypto';
import { existsSync, mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { generateHumanInputs, type HumanInputsSummary } from '../build/generate/human.js';
import { importCore, loadCoreConfig } from '../build/import/core.js';
import { importTrack } from '../build/import/tracks.js';
import { TRACKS } from '../build/release-db/schema.js';
import { updateReleaseDb } from '../build/release-db/database.js';
import { renderTree } from '../build/render/index.js';
import { treePaths } from '../edge/contract/tree.js';
import { runCli } from './helpers/run.js';
import { startServer, type RunningServer } from './helpers/server.js';

const GENES = 300;
const STRUCTURE_BASE = 'https://structures.example.org/isoatlas-generated';

function digestDir(dir: string): Record<string, string> {
  const out: Record<string, string> = {};
  const walk = (rel: string) => {
    for (const entry of readdirSync(join(dir, rel), { withFileTypes: true })) {
      const path = rel ? `${rel}/${entry.name}` : entry.name;
      if (entry.isDirectory()) walk(path);
      else
        out[path] = createHash('sha256')
          .update(readFileSync(join(dir, path)))
          .digest('hex');
    }
  };
  walk('');
  return out;
}

let work: string;
let summary: HumanInputsSummary;
let db: Database.Database;
let tree: string;
let server: RunningServer;
const json = (path: string) => JSON.parse(readFileSync(join(tree, path), 'utf8'));

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-human-'));
  summary = generateHumanInputs(join(work, 'inputs'), { seed: 5, genes: GENES });
  const dbPath = join(work, 'release.sqlite');
  await importCore(loadCoreConfig(summary.config), dbPath);
  await updateReleaseDb(dbPath, async (handle) => {
    for (const track of TRACKS) {
      await importTrack(handle, {
        track,
        file: summary.tracks[track],
        source: 'isoatlas human-scale generator',
        version: 'seed 5',
        generated: true,
      });
    }
  });
  tree = join(work, 'tree');
  await renderTree(dbPath, tree, { progress: false });
  db = new Database(dbPath, { readonly: true });
  server = await startServer({ dir: tree, extraArgs: ['--structure-base', STRUCTURE_BASE] });
});

afterAll(async () => {
  await server?.stop();
  db?.close();
  rmSync(work, { recursive: true, force: true });
});

describe('generateHumanInputs at 300 genes, imported and built', () => {
  it('has the configured numbers of genes and isoforms, 40 % of them long-read, in the release', () => {
    // The human ratios: 250,000 isoforms per 62,000 genes, 100,000 of them long-read.
    const isoforms = Math.round((GENES * 250_000) / 62_000);
    expect(summary.referenceIsoforms + summary.longReadIsoforms).toBe(isoforms);
    expect(summary.longReadIsoforms).toBe(Math.round(isoforms * 0.4));
    const counts = json(treePaths.release).counts;
    expect(counts).toMatchObject({
      genes: GENES,
      novel_genes: summary.novelGenes,
      isoforms,
      long_read_isoforms: summary.longReadIsoforms,
      coding_isoforms: summary.codingIsoforms,
      domains: summary.domains,
      neoantigens: summary.neoantigens,
      ptm_sites: summary.ptm,
      structures: summary.structures,
    });
    expect(summary.novelGenes).toBeGreaterThan(0);
    // About 6 domains and 20 neoantigens per coding isoform, as 1.5 M and 5 M are for 250,000.
    expect(summary.domains / summary.codingIsoforms).toBeGreaterThan(4);
    expect(summary.domains / summary.codingIsoforms).toBeLessThan(8);
    expect(summary.neoantigens / summary.codingIsoforms).toBeGreaterThan(15);
    expect(summary.neoantigens / summary.codingIsoforms).toBeLessThan(25);
  });

  it('spreads genes over chromosomes 1-22, X, Y and M with GENCODE- and PacBio-shaped ids', () => {
    const chromosomes = (db.prepare('SELECT DISTINCT chromosome FROM genes').pluck().all() as string[]).sort();
    expect(chromosomes).toEqual(expect.arrayContaining(['chr1', 'chr2', 'chr19', 'chrX']));
    expect(chromosomes.every((c) => /^chr(\d{1,2}|X|Y|M)$/.test(c))).toBe(true);
    const ids = db.prepare('SELECT transcript_id, source FROM isoforms').all() as {
      transcript_id: string;
      source: string;
    }[];
    for (const { transcript_id, source } of ids) {
      expect(transcript_id).toMatch(source === 'reference' ? /^ENST\d{11}\.\d+$/ : /^PB\.\d+\.\d+$/);
    }
    const geneIds = db.prepare("SELECT gene_id, gene_id_versioned FROM genes WHERE source = 'reference'").all() as {
      gene_id: string;
      gene_id_versioned: string;
    }[];
    for (const g of geneIds) expect(g.gene_id_versioned).toMatch(new RegExp(`^${g.gene_id}\\.\\d+$`));
    const symbols = db
      .prepare("SELECT symbol FROM genes WHERE source = 'reference' AND symbol NOT LIKE 'ENSG%'")
      .pluck()
      .all() as string[];
    expect(symbols.every((s) => s.length >= 2 && s.length <= 16)).toBe(true); // U6 is a shared small-RNA symbol
    // GENCODE's mix (the demo's real chr22 symbols: median 8, 7% of 4 characters or fewer), not a
    // space of short names so dense that every typo of one spells another.
    const lengths = symbols.map((s) => s.length).sort((a, b) => a - b);
    expect(lengths[Math.floor(lengths.length / 2)]).toBeGreaterThanOrEqual(6);
    expect(lengths.filter((l) => l <= 4).length / lengths.length).toBeLessThan(0.12);
    expect(symbols.some((s) => /-AS\d$/.test(s)) && symbols.some((s) => /^A[CLP]\d{6}\.\d+$/.test(s))).toBe(true);
  });

  it('skews isoform counts: most genes have 1-5, a few need several isoform pages of 100', () => {
    const perGene = db.prepare('SELECT count(*) FROM isoforms GROUP BY gene_id').pluck().all() as number[];
    expect(perGene.filter((n) => n <= 5).length / perGene.length).toBeGreaterThan(0.7);
    const big = db
      .prepare('SELECT gene_id, count(*) AS n FROM isoforms GROUP BY gene_id HAVING n > 100 ORDER BY n DESC')
      .all() as { gene_id: string; n: number }[];
    expect(big.length).toBe(summary.multiPageGenes);
    expect(big.length).toBeGreaterThanOrEqual(2);
    const { gene_id, n } = big[0]!;
    const pages = Math.ceil(n / 100);
    const first = json(treePaths.geneIsoforms(gene_id, 0));
    expect(first.total).toBe(n);
    expect(first.next).toBe(`/api/v1/genes/${gene_id}/isoforms?limit=100&offset=100`);
    const last = json(treePaths.geneIsoforms(gene_id, pages - 1));
    expect(last.items).toHaveLength(n - (pages - 1) * 100);
    expect(last.next).toBeNull();
    expect(existsSync(join(tree, treePaths.geneIsoforms(gene_id, pages)))).toBe(false);
  });

  it('keeps at most 50 neoantigens per isoform, each a real peptide of its protein', () => {
    expect(
      db.prepare('SELECT max(n) FROM (SELECT count(*) AS n FROM neoantigens GROUP BY transcript_id)').pluck().get(),
    ).toBeLessThanOrEqual(50);
    const rows = db
      .prepare(
        'SELECT n.transcript_id, n.peptide, n.start, i.protein_sequence FROM neoantigens n JOIN isoforms i USING (transcript_id) LIMIT 2000',
      )
      .all() as { peptide: string; start: number; protein_sequence: string }[];
    for (const r of rows) expect(r.protein_sequence.slice(r.start - 1, r.start - 1 + r.peptide.length)).toBe(r.peptide);
    const busiest = db
      .prepare(
        'SELECT transcript_id, count(*) AS n FROM neoantigens GROUP BY transcript_id ORDER BY n DESC, transcript_id LIMIT 1',
      )
      .get() as { transcript_id: string; n: number };
    const body = json(treePaths.neoantigens(busiest.transcript_id));
    expect(body.total).toBe(busiest.n);
    expect(body.items).toHaveLength(busiest.n);
  });

  it('annotates each coding reference isoform with GTF CDS, start and stop codon features that match its ORF', () => {
    // The generated GTF read line by line: per transcript, its CDS bases and the span of its
    // CDS and stop_codon features, and its start and stop codons' lengths.
    const features = new Map<string, { cds: number; start: number; stop: number; lo: number; hi: number }>();
    for (const line of readFileSync(join(work, 'inputs', 'reference.gtf'), 'utf8').split('\n')) {
      const f = line.split('\t');
      if (f[2] !== 'CDS' && f[2] !== 'start_codon' && f[2] !== 'stop_codon') continue;
      const id = /transcript_id "([^"]+)"/.exec(f[8]!)![1]!;
      const [lo, hi] = [Number(f[3]), Number(f[4])];
      const acc = features.get(id) ?? { cds: 0, start: 0, stop: 0, lo: Infinity, hi: 0 };
      features.set(id, acc);
      if (f[2] === 'start_codon') acc.start += hi - lo + 1;
      else {
        if (f[2] === 'CDS') acc.cds += hi - lo + 1;
        else acc.stop += hi - lo + 1;
        [acc.lo, acc.hi] = [Math.min(acc.lo, lo), Math.max(acc.hi, hi)];
      }
    }
    const coding = db
      .prepare(
        "SELECT transcript_id, protein_length, orf_start, orf_end FROM isoforms WHERE source = 'reference' AND coding = 1",
      )
      .all() as { transcript_id: string; protein_length: number; orf_start: number; orf_end: number }[];
    expect(coding.length).toBe(
      summary.codingIsoforms -
        Number(db.prepare("SELECT count(*) FROM isoforms WHERE source = 'long_read' AND coding = 1").pluck().get()),
    );
    expect(features.size).toBe(coding.length);
    for (const i of coding) {
      const f = features.get(i.transcript_id);
      expect(f, i.transcript_id).toEqual({
        cds: 3 * i.protein_length,
        start: 3,
        stop: 3,
        lo: i.orf_start,
        hi: i.orf_end,
      });
    }
  });

  it('serves every coding isoform with its ORF and every long-read isoform with its SQANTI3 QC', () => {
    const rows = db.prepare('SELECT transcript_id, source, coding FROM isoforms').all() as {
      transcript_id: string;
      source: string;
      coding: number;
    }[];
    let coding = 0;
    let longRead = 0;
    for (const r of rows) {
      const body = json(treePaths.isoform(r.transcript_id));
      if (r.coding) {
        coding += 1;
        expect(body.orf, r.transcript_id).not.toBeNull();
        expect(body.orf.source, r.transcript_id).toBe('sqanti3');
      }
      if (r.source === 'long_read') {
        longRead += 1;
        expect(body.qc, r.transcript_id).not.toBeNull();
      }
    }
    expect(coding).toBe(summary.codingIsoforms);
    expect(longRead).toBe(summary.longReadIsoforms);
  });

  it("takes each gene's tagged transcript as canonical: MANE_Select, else Ensembl_canonical", () => {
    const tagged = new Map<string, { mane?: string; ensembl?: string }>();
    for (const line of readFileSync(join(work, 'inputs', 'reference.gtf'), 'utf8').split('\n')) {
      const f = line.split('\t');
      if (f[2] !== 'transcript') continue;
      const gene = /gene_id "(ENSG\d+)/.exec(f[8]!)![1]!;
      const id = /transcript_id "([^"]+)"/.exec(f[8]!)![1]!;
      const t = tagged.get(gene) ?? {};
      tagged.set(gene, t);
      if (f[8]!.includes('tag "MANE_Select"')) t.mane = id;
      if (f[8]!.includes('tag "Ensembl_canonical"')) t.ensembl = id;
    }
    const canonical = db.prepare(
      'SELECT canonical_transcript_id AS id, canonical_rule AS rule FROM genes WHERE gene_id = ?',
    );
    let mane = 0;
    for (const [gene, t] of tagged) {
      if (t.mane) mane += 1;
      const expected = t.mane
        ? { id: t.mane, rule: 'MANE_Select' }
        : t.ensembl
          ? { id: t.ensembl, rule: 'Ensembl_canonical' }
          : null;
      if (expected) expect(canonical.get(gene), gene).toEqual(expected);
    }
    expect(mane).toBeGreaterThan(0);
    expect(db.prepare("SELECT count(*) FROM genes WHERE canonical_rule = 'MANE_Select'").pluck().get()).toBe(mane);
  });

  it('marks every source and record generated', () => {
    const release = json(treePaths.release);
    expect(release.title).toMatch(/GENERATED/);
    expect(release.sources.length).toBeGreaterThanOrEqual(6);
    expect(release.sources.every((s: { generated: boolean }) => s.generated)).toBe(true);
    expect(release.generated_tracks).toEqual(['domains', 'long_read', 'neoantigens', 'ptm', 'reference', 'structures']);
    for (const table of ['domains', 'neoantigens', 'ptm_sites', 'structures']) {
      expect(db.prepare(`SELECT count(*) FROM ${table} WHERE provenance != 'generated'`).pluck().get()).toBe(0);
    }
    const iso = db.prepare('SELECT transcript_id FROM domains LIMIT 1').pluck().get() as string;
    const domains = json(treePaths.domains(iso)).items as { provenance: string }[];
    expect(domains.length).toBeGreaterThan(0);
    expect(domains.every((d) => d.provenance === 'generated')).toBe(true);
  });

  it('resolves symbols, transcript names and unversioned ids at the edge; a shared symbol is 409 with its choices', async () => {
    const g = db
      .prepare(
        "SELECT gene_id, symbol FROM genes WHERE source = 'reference' AND symbol NOT IN (SELECT symbol FROM genes GROUP BY symbol HAVING count(*) > 1) LIMIT 1",
      )
      .get() as { gene_id: string; symbol: string };
    const gene = await fetch(`${server.api}/genes/${encodeURIComponent(g.symbol.toLowerCase())}`);
    expect(gene.status).toBe(200);
    expect((await gene.json()).gene_id).toBe(g.gene_id);
    const named = db
      .prepare(
        "SELECT transcript_id, transcript_name, transcript_id_unversioned FROM isoforms WHERE source = 'reference' AND transcript_name_source = 'gtf' LIMIT 1",
      )
      .get() as { transcript_id: string; transcript_name: string; transcript_id_unversioned: string };
    for (const alias of [named.transcript_name, named.transcript_id_unversioned]) {
      const res = await fetch(`${server.api}/isoforms/${encodeURIComponent(alias)}`);
      expect(res.status).toBe(200);
      expect((await res.json()).transcript_id).toBe(named.transcript_id);
    }
    const lr = db
      .prepare("SELECT transcript_id, transcript_name FROM isoforms WHERE source = 'long_read' LIMIT 1")
      .get() as { transcript_id: string; transcript_name: string };
    expect(lr.transcript_name).toMatch(/-LR\d+$/);
    expect(
      (await (await fetch(`${server.api}/isoforms/${encodeURIComponent(lr.transcript_name)}`)).json()).transcript_id,
    ).toBe(lr.transcript_id);
    const shared = db.prepare('SELECT symbol, count(*) AS n FROM genes GROUP BY symbol HAVING n > 1 LIMIT 1').get() as {
      symbol: string;
      n: number;
    };
    const multiple = await fetch(`${server.api}/genes/${encodeURIComponent(shared.symbol)}`);
    expect(multiple.status).toBe(409);
    expect((await multiple.json()).choices).toHaveLength(shared.n);
  });

  it('records structures by path only and redirects them into the structure base', async () => {
    expect(
      db.prepare('SELECT count(*) FROM structures WHERE mmcif IS NOT NULL OR plddt_residues IS NOT NULL').pluck().get(),
    ).toBe(0);
    expect(existsSync(join(tree, 'structures'))).toBe(false);
    const id = db
      .prepare('SELECT transcript_id FROM structures ORDER BY transcript_id LIMIT 1')
      .pluck()
      .get() as string;
    expect(json(treePaths.isoform(id)).links.structure).toBe(`/api/v1/isoforms/${id}/structure`);
    const res = await fetch(`${server.api}/isoforms/${id}/structure`, { redirect: 'manual' });
    expect(res.status).toBe(307);
    expect(res.headers.get('location')).toBe(`${STRUCTURE_BASE}/structures/${id}.cif`);
  });

  it('writes byte-identical inputs for the same seed, and different ones for another seed', () => {
    const again = join(work, 'again');
    const other = join(work, 'other');
    generateHumanInputs(again, { seed: 5, genes: GENES });
    generateHumanInputs(other, { seed: 6, genes: GENES });
    const first = digestDir(join(work, 'inputs'));
    expect(Object.keys(first)).toHaveLength(summary.files);
    expect(digestDir(again)).toEqual(first);
    const changed = digestDir(other);
    expect(changed['reference.gtf']).not.toBe(first['reference.gtf']);
    expect(changed['tracks/neoantigens.tsv']).not.toBe(first['tracks/neoantigens.tsv']);
  });
});

describe('isoatlas generate --scale', () => {
  const cli = (...args: string[]) => runCli(args);

  it('is a usage error (exit 2) for an unknown scale, and for --scale demo without --db', async () => {
    const unknown = await cli('generate', '--scale', 'mouse', '--out', join(work, 'x'));
    expect(unknown.status).toBe(2);
    expect(unknown.stderr).toMatch(/expected demo or human/);
    const noDb = await cli('generate', '--out', join(work, 'x'));
    expect(noDb.status).toBe(2);
    expect(noDb.stderr).toMatch(/--scale demo needs --db/);
  });

  it('writes the same input set from the command line as from the API', async () => {
    const out = join(work, 'cli');
    const r = await cli('generate', '--scale', 'human', '--genes', String(GENES), '--seed', '5', '--out', out);
    expect(r.status, r.stderr).toBe(0);
    expect(r.stderr).toMatch(/generated a synthetic human-scale input set \(seed 5\): 300 genes/);
    expect(digestDir(out)).toEqual(digestDir(join(work, 'inputs')));
  });
});
