import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import { DDL } from '../build/release-db/schema.js';
import { generateDemoTracks, type DemoTracksResult } from '../build/generate/demo-tracks.js';
import { Rng } from '../build/generate/random.js';

const DATA = join(import.meta.dirname, '..', 'data', 'chr22');
// BID, COMT, SMARCB1 and RANBP1 have several coding isoforms that share and lose regions;
// TRMT2A (626–644 aa) is too long for a structure; U2 is a non-coding gene.
const GENES = [
  'ENSG00000015475',
  'ENSG00000093010',
  'ENSG00000099956',
  'ENSG00000099901',
  'ENSG00000099899',
  'ENSG00000277248',
];

interface Transcript {
  transcriptId: string;
  geneId: string;
  geneName: string;
  chromosome: string;
  strand: string;
  start: number;
  end: number;
  exons: number;
  length: number;
}

/** Real chr22 GENCODE transcripts (GTF) and their ORFs (FASTA) for the genes above. */
function loadChr22(): { transcripts: Transcript[]; proteins: Map<string, string> } {
  const proteins = new Map<string, string>();
  let current = '';
  for (const line of gunzipSync(readFileSync(join(DATA, 'gencode.v38.basic_chr22_corrected.faa.gz')))
    .toString('utf8')
    .split('\n')) {
    if (line.startsWith('>')) {
      current = line.slice(1).split('\t')[0]!;
      proteins.set(current, '');
    } else if (current) proteins.set(current, proteins.get(current)! + line.trim());
  }
  const transcripts = new Map<string, Transcript>();
  for (const line of gunzipSync(readFileSync(join(DATA, 'gencode.v38.basic_chr22_corrected.gtf.gz')))
    .toString('utf8')
    .split('\n')) {
    const f = line.split('\t');
    if (f.length < 9) continue;
    const attr = (key: string): string => new RegExp(`${key} "([^"]+)"`).exec(f[8]!)![1]!;
    const geneId = attr('gene_id').split('.')[0]!;
    if (!GENES.includes(geneId)) continue;
    const transcriptId = attr('transcript_id');
    if (f[2] === 'transcript') {
      transcripts.set(transcriptId, {
        transcriptId,
        geneId,
        geneName: attr('gene_name'),
        chromosome: f[0]!,
        strand: f[6]!,
        start: Number(f[3]),
        end: Number(f[4]),
        exons: 0,
        length: 0,
      });
    } else if (f[2] === 'exon') {
      const t = transcripts.get(transcriptId)!;
      t.exons++;
      t.length += Number(f[4]) - Number(f[3]) + 1;
    }
  }
  return { transcripts: [...transcripts.values()], proteins };
}

function buildDb(): Database.Database {
  const { transcripts, proteins } = loadChr22();
  const db = new Database(':memory:');
  db.exec(DDL);
  const insertGene = db.prepare(
    `INSERT OR IGNORE INTO genes (gene_id, symbol, source, chromosome, strand, start, end) VALUES (?, ?, 'reference', ?, ?, ?, ?)`,
  );
  const insertIsoform = db.prepare(
    `INSERT INTO isoforms (transcript_id, transcript_id_unversioned, transcript_name, transcript_name_source, gene_id, source,
       chromosome, strand, start, end, length, exon_count, coding, protein_length, protein_sequence)
     VALUES (?, ?, ?, 'generated', ?, 'reference', ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
  );
  db.transaction(() => {
    transcripts.forEach((t, i) => {
      const orf = proteins.get(t.transcriptId);
      const protein = orf === undefined ? null : orf.replace(/\*$/, '');
      insertGene.run(t.geneId, t.geneName, t.chromosome, t.strand, t.start, t.end);
      insertIsoform.run(
        t.transcriptId,
        t.transcriptId.split('.')[0],
        `${t.geneName}-${200 + i}`,
        t.geneId,
        t.chromosome,
        t.strand,
        t.start,
        t.end,
        t.length,
        t.exons,
        protein === null ? 0 : 1,
        protein?.length ?? null,
        protein,
      );
    });
  })();
  return db;
}

function readTsv(path: string): Record<string, string>[] {
  const [header, ...lines] = readFileSync(path, 'utf8').replace(/\n$/, '').split('\n');
  const columns = header!.split('\t');
  return lines.map((line) => {
    const values = line.split('\t');
    expect(values).toHaveLength(columns.length);
    return Object.fromEntries(columns.map((c, i) => [c, values[i]!]));
  });
}

function listFiles(dir: string): string[] {
  return readdirSync(dir, { recursive: true, withFileTypes: true })
    .filter((e) => e.isFile())
    .map((e) =>
      join(e.parentPath, e.name)
        .slice(dir.length + 1)
        .split('\\')
        .join('/'),
    )
    .sort();
}

function parseSegments(text: string): [number, number][] {
  return text.split('_').map((s) => s.split('-').map(Number) as [number, number]);
}

describe('Rng', () => {
  it('is deterministic per seed and stays in range', () => {
    const a = new Rng(42);
    const b = new Rng(42);
    const draws = Array.from({ length: 1000 }, () => a.int(3, 7));
    expect(Array.from({ length: 1000 }, () => b.int(3, 7))).toEqual(draws);
    expect(Math.min(...draws)).toBe(3);
    expect(Math.max(...draws)).toBe(7);
    expect(Array.from({ length: 5 }, () => new Rng(43).next())).not.toEqual(
      Array.from({ length: 5 }, () => new Rng(42).next()),
    );
  });
});

describe('generateDemoTracks', () => {
  let db: Database.Database;
  let root: string;
  let proteins: Map<string, string>;
  let geneOf: Map<string, string>;
  let first: DemoTracksResult;
  const dir = (name: string): string => join(root, name);

  beforeAll(() => {
    db = buildDb();
    root = mkdtempSync(join(tmpdir(), 'isoatlas-generate-'));
    const rows = db
      .prepare(`SELECT transcript_id, gene_id, protein_sequence FROM isoforms WHERE coding = 1 ORDER BY transcript_id`)
      .all() as { transcript_id: string; gene_id: string; protein_sequence: string }[];
    proteins = new Map(rows.map((r) => [r.transcript_id, r.protein_sequence]));
    geneOf = new Map(rows.map((r) => [r.transcript_id, r.gene_id]));
    first = generateDemoTracks(db, dir('a'), { seed: 7 });
  });

  afterAll(() => {
    db.close();
    rmSync(root, { recursive: true, force: true });
  });

  it('uses real data with enough isoforms to be meaningful', () => {
    expect(proteins.size).toBeGreaterThan(20);
    expect(first.domains).toBeGreaterThan(0);
    expect(first.neoantigens).toBeGreaterThan(0);
    expect(first.ptm).toBeGreaterThan(0);
    expect(first.files).toEqual(listFiles(dir('a')));
  });

  it('writes byte-identical output for the same seed, and different output for another seed', () => {
    const second = generateDemoTracks(db, dir('b'), { seed: 7 });
    expect(second).toEqual(first);
    const files = listFiles(dir('a'));
    expect(listFiles(dir('b'))).toEqual(files);
    for (const f of files)
      expect(readFileSync(join(dir('b'), f)).equals(readFileSync(join(dir('a'), f))), f).toBe(true);

    generateDemoTracks(db, dir('c'), { seed: 8 });
    for (const f of ['domains.tsv', 'neoantigens.tsv', 'ptm.tsv', 'structures.tsv']) {
      expect(readFileSync(join(dir('c'), f), 'utf8'), f).not.toBe(readFileSync(join(dir('a'), f), 'utf8'));
    }
  });

  it('writes the documented headers', () => {
    const header = (f: string): string => readFileSync(join(dir('a'), f), 'utf8').split('\n')[0]!;
    expect(header('domains.tsv')).toBe(
      'transcript_id\tsource\taccession\tname\tstart\tend\tsegments\tscore\tscore_kind\tevalue',
    );
    expect(header('neoantigens.tsv')).toBe('transcript_id\tpeptide\tallele\taffinity_nm\tpercentile_rank\tstart');
    expect(header('ptm.tsv')).toBe('transcript_id\tposition\tresidue\tmodification\tsource');
    expect(header('structures.tsv')).toBe('transcript_id\tmodel_file\tmean_plddt\tmodel_source');
  });

  it('takes neoantigen peptides from the protein', () => {
    const rows = readTsv(join(dir('a'), 'neoantigens.tsv'));
    expect(rows.length).toBe(first.neoantigens);
    for (const r of rows) {
      const protein = proteins.get(r.transcript_id!)!;
      const start = Number(r.start);
      expect(r.peptide!.length).toBeGreaterThanOrEqual(8);
      expect(r.peptide!.length).toBeLessThanOrEqual(11);
      expect(r.peptide).toMatch(/^[ACDEFGHIKLMNPQRSTVWY]+$/);
      expect(protein.substr(start - 1, r.peptide!.length)).toBe(r.peptide);
      expect(r.allele).toMatch(/^HLA-[ABC]\*\d\d:\d\d$/);
      expect(r.affinity_nm).toMatch(/^\d+\.\d\d$/);
      expect(r.percentile_rank).toMatch(/^\d+\.\d\d$/);
      expect(Number(r.affinity_nm)).toBeGreaterThanOrEqual(5);
      expect(Number(r.affinity_nm)).toBeLessThanOrEqual(5000);
      expect(Number(r.percentile_rank)).toBeGreaterThanOrEqual(0.01);
      expect(Number(r.percentile_rank)).toBeLessThanOrEqual(20);
    }
    const keys = rows.map((r) => [r.transcript_id!, Number(r.start)] as const);
    const sorted = [...keys].sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : a[1] - b[1]));
    expect(keys).toEqual(sorted);
  });

  it('puts PTM sites on matching residues and glycosylation in sequons', () => {
    const rows = readTsv(join(dir('a'), 'ptm.tsv'));
    expect(rows.length).toBe(first.ptm);
    const expectedResidue: Record<string, string> = {
      Phosphoserine: 'S',
      Phosphothreonine: 'T',
      Phosphotyrosine: 'Y',
      'N6-acetyllysine': 'K',
      'Omega-N-methylarginine': 'R',
      'N-linked (GlcNAc...) asparagine': 'N',
    };
    const seen = new Set<string>();
    for (const r of rows) {
      const protein = proteins.get(r.transcript_id!)!;
      const position = Number(r.position);
      expect(protein[position - 1]).toBe(r.residue);
      expect(expectedResidue[r.modification!]).toBe(r.residue);
      expect(r.source).toBe('isoatlas-demo-generator');
      if (r.residue === 'N') {
        expect(protein[position]).not.toBe('P');
        expect(['S', 'T']).toContain(protein[position + 1]);
      }
      const key = `${r.transcript_id}\t${r.position}\t${r.modification}`;
      expect(seen.has(key), key).toBe(false);
      seen.add(key);
    }
  });

  it('keeps domains inside the protein and copies them only where the sequence is conserved', () => {
    const rows = readTsv(join(dir('a'), 'domains.tsv'));
    expect(rows.length).toBe(first.domains);
    for (const r of rows) {
      const length = proteins.get(r.transcript_id!)!.length;
      const segments = parseSegments(r.segments!);
      expect(Number(r.start)).toBe(segments[0]![0]);
      expect(Number(r.end)).toBe(segments[segments.length - 1]![1]);
      segments.forEach(([s, e], i) => {
        expect(s).toBeGreaterThanOrEqual(1);
        expect(e).toBeGreaterThanOrEqual(s);
        expect(e).toBeLessThanOrEqual(length);
        if (i > 0) expect(s).toBeGreaterThan(segments[i - 1]![1]);
      });
      if (r.source === 'pfam') {
        expect(r.accession).toMatch(/^PF\d{5}$/);
        expect(Number(r.evalue)).toBeGreaterThan(0);
        expect(e(r.end) - e(r.start) + 1).toBeGreaterThanOrEqual(25);
      } else {
        expect(r.source).toBe('ted');
        expect(r.accession).toMatch(new RegExp(`^${r.transcript_id!.replace(/\./g, '\\.')}_TED\\d\\d$`));
        expect(r.name).toMatch(/^\d+\.\d+\.\d+\.\d+$/);
        expect(r.evalue).toBe('');
      }
    }

    // Recompute the copy rule independently: each domain of the gene's longest protein appears on
    // exactly the isoforms that contain its sequence, at the matching offset.
    const byGene = new Map<string, string[]>();
    for (const [tid, gene] of geneOf) byGene.set(gene, [...(byGene.get(gene) ?? []), tid]);
    const signature = (r: Record<string, string>): string => [r.source, r.name, r.score, r.evalue].join('|');
    let copies = 0;
    let lost = 0;
    for (const members of byGene.values()) {
      let longest = members[0]!;
      for (const m of members) if (proteins.get(m)!.length > proteins.get(longest)!.length) longest = m;
      const own = rows.filter((r) => r.transcript_id === longest);
      for (const d of own) {
        const region = proteins.get(longest)!.slice(e(d.start) - 1, e(d.end));
        for (const sibling of members) {
          if (sibling === longest) continue;
          const index = proteins.get(sibling)!.indexOf(region);
          const shift = index + 1 - e(d.start);
          const match = rows.filter(
            (r) => r.transcript_id === sibling && signature(r) === signature(d) && e(r.start) === e(d.start) + shift,
          );
          if (index < 0) {
            lost++;
            expect(rows.filter((r) => r.transcript_id === sibling && signature(r) === signature(d))).toHaveLength(0);
            continue;
          }
          copies++;
          expect(match, `${d.accession} on ${sibling}`).toHaveLength(1);
          const copy = match[0]!;
          const shifted = parseSegments(d.segments!)
            .map(([s, t]) => `${s + shift}-${t + shift}`)
            .join('_');
          expect(copy.segments).toBe(shifted);
          expect(proteins.get(sibling)!.slice(e(copy.start) - 1, e(copy.end))).toBe(region);
        }
      }
    }
    // Every domain row is either on a longest protein or a copy of one.
    const sourceRows = [...byGene.values()].map((m) =>
      m.reduce((a, b) => (proteins.get(b)!.length > proteins.get(a)!.length ? b : a)),
    );
    expect(rows.filter((r) => sourceRows.includes(r.transcript_id!)).length + copies).toBe(rows.length);
    expect(copies).toBeGreaterThan(0);
    expect(lost).toBeGreaterThan(0);
  });

  it('writes one CA per residue and a mean pLDDT that matches the model file', () => {
    const rows = readTsv(join(dir('a'), 'structures.tsv'));
    const eligible = [...proteins.values()].filter((p) => p.length >= 30 && p.length <= 600).length;
    expect(eligible).toBeLessThan(proteins.size); // TRMT2A is excluded
    expect(rows.length).toBe(Math.min(150, eligible));
    expect(rows.length).toBe(first.structures);
    for (const r of rows) {
      const protein = proteins.get(r.transcript_id!)!;
      expect(protein.length).toBeGreaterThanOrEqual(30);
      expect(protein.length).toBeLessThanOrEqual(600);
      expect(r.model_file).toBe(`structures/${r.transcript_id}.cif`);
      expect(r.model_source).toBe('isoatlas demo generator (CA-only, generated)');
      const cif = readFileSync(join(dir('a'), r.model_file!), 'utf8');
      expect(cif.startsWith(`data_${r.transcript_id}\n`)).toBe(true);
      expect(cif).toMatch(/GENERATED/);
      const atoms = cif
        .split('\n')
        .filter((l) => l.startsWith('ATOM '))
        .map((l) => l.split(/\s+/));
      expect(atoms).toHaveLength(protein.length);
      atoms.forEach((a, i) => {
        expect(a).toHaveLength(18);
        expect(a[3]).toBe('CA');
        expect(Number(a[8])).toBe(i + 1);
      });
      const plddt = atoms.map((a) => Number(a[14]));
      for (const p of plddt) {
        expect(p).toBeGreaterThanOrEqual(20);
        expect(p).toBeLessThanOrEqual(98);
      }
      const mean = plddt.reduce((x, y) => x + y, 0) / plddt.length;
      expect(Math.abs(mean - Number(r.mean_plddt))).toBeLessThanOrEqual(0.005);
      for (let i = 1; i < atoms.length; i++) {
        const d = Math.hypot(...[10, 11, 12].map((k) => Number(atoms[i]![k]) - Number(atoms[i - 1]![k])));
        expect(Math.abs(d - 3.8)).toBeLessThan(0.01);
      }
    }
  });

  it('samples structures deterministically and removes stale models', () => {
    const small = generateDemoTracks(db, dir('a'), { seed: 7, structureSample: 5 });
    expect(small.structures).toBe(5);
    const models = listFiles(dir('a')).filter((f) => f.startsWith('structures/'));
    expect(models).toHaveLength(5);
    const ids = readTsv(join(dir('a'), 'structures.tsv')).map((r) => r.transcript_id!);
    expect(ids).toEqual([...ids].sort());
    expect(models).toEqual(ids.map((id) => `structures/${id}.cif`));
    expect(generateDemoTracks(db, dir('d'), { seed: 7, structureSample: 5 })).toEqual(small);
  });
});

function e(value: string | undefined): number {
  return Number(value);
}
