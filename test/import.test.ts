// Importers on the real inputs: the chr22 GENCODE v38 / PacBio UHR files and the GENCODE v49 subset.
// Expected figures were counted independently from the raw files (awk over the GTF / classification).
import { describe, expect, it, beforeAll, afterAll } from 'vitest';
import { demoRelease, type DemoRelease } from './helpers/demo-release.js';
import Database from 'better-sqlite3';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { readGtf } from '../build/import/gtf.js';
import { readSqantiClassification } from '../build/import/sqanti.js';
import { readProteinFasta } from '../build/import/fasta.js';
import { importCore, loadCoreConfig } from '../build/import/core.js';
import { loadGenes } from '../build/render/core-rows.js';
import { geneXrefs } from '../build/render/gene-record.js';

const chr22 = (f: string) => join(__dirname, '../data/chr22', f);

describe('GTF reader', () => {
  it('reads GENCODE v38 chr22: 2,428 transcripts of 1,388 gene ids and 1,359 symbols, no names', async () => {
    const gtf = await readGtf(chr22('gencode.v38.basic_chr22_corrected.gtf.gz'));
    expect(gtf.transcripts.size).toBe(2428);
    const transcripts = [...gtf.transcripts.values()];
    expect(new Set(transcripts.map((t) => t.geneId)).size).toBe(1388);
    expect(new Set(transcripts.map((t) => t.geneName)).size).toBe(1359);
    expect(transcripts.every((t) => t.transcriptName === null)).toBe(true);
    const prr5 = gtf.transcripts.get('ENST00000006251.11')!;
    expect(prr5).toMatchObject({
      geneId: 'ENSG00000186654.21',
      geneName: 'PRR5',
      strand: '+',
      exonCount: 9,
      length: 1767,
    });
  });

  it('reads GENCODE v49 with names, types and repeated tags', async () => {
    const gtf = await readGtf(join(__dirname, '../data/gencode-v49/gencode.v49.tusco_subset.gtf.gz'));
    expect(gtf.transcripts.size).toBe(971);
    expect(gtf.genes.size).toBe(141);
    const t = gtf.transcripts.get('ENST00000900949.1')!;
    expect(t.transcriptName).toBe('SDF4-209');
    expect(t.transcriptType).toBe('protein_coding');
    expect(t.tags).toEqual(['CCDS', 'TAGENE', 'appris_principal_3', 'basic']);
    expect(t).toMatchObject({ proteinId: 'ENSP00000571008.1', hgncId: 'HGNC:24188', geneType: 'protein_coding' });
    expect(t.cdsLength).toBeGreaterThan(0);
    // Counted from the file's transcript lines: 765 carry protein_id, 908 hgnc_id.
    const all = [...gtf.transcripts.values()];
    expect(all.filter((x) => x.proteinId !== null)).toHaveLength(765);
    expect(all.filter((x) => x.hgncId !== null)).toHaveLength(908);
    expect(gtf.warnings).toHaveLength(7); // transcripts clipped out of the subset's regions, exons and all
    expect(gtf.transcripts.get('ENST00000721462.1')).toMatchObject({ exonCount: 1, length: 58027 - 45002 + 1 });
    expect(gtf.genes.get('ENSG00000078808.21')).toMatchObject({
      geneName: 'SDF4',
      geneType: 'protein_coding',
      hgncId: 'HGNC:24188',
      start: 45002,
      end: 56634,
    });
  });

  it('reads the PacBio GTF: 3,925 PB isoforms', async () => {
    const gtf = await readGtf(chr22('UHR_chr22_corrected.gtf.gz'));
    expect(gtf.transcripts.size).toBe(3925);
    expect(gtf.transcripts.get('PB.3796.1')?.geneId).toBe('PB.3796');
  });
});

describe('SQANTI3 classification and protein FASTA readers', () => {
  it('reads the long-read classification: categories and NMD calls', async () => {
    const rows = await readSqantiClassification(chr22('UHR_chr22_classification.txt.gz'));
    expect(rows.size).toBe(3925);
    const counts: Record<string, number> = {};
    for (const r of rows.values()) counts[r.structuralCategory] = (counts[r.structuralCategory] ?? 0) + 1;
    expect(counts).toMatchObject({
      fusion: 38,
      'full-splice_match': 539,
      novel_not_in_catalog: 1139,
      intergenic: 41,
      antisense: 26,
    });
    const nmd = [...rows.values()].map((r) => r.predictedNmd);
    expect(nmd.filter((v) => v === true).length).toBe(508);
    expect(nmd.filter((v) => v === false).length).toBe(2511);
    expect(nmd.filter((v) => v === null).length).toBe(906);
  });

  it('drops the terminal stop: protein length = SQANTI3 ORF_length − 1 when the ORF has a stop', async () => {
    const fasta = await readProteinFasta(chr22('gencode.v38.basic_chr22_corrected.faa.gz'));
    const rows = await readSqantiClassification(chr22('gencode.v38.basic_chr22_classification.txt.gz'));
    expect(fasta.sequences.size).toBe(1589);
    const prr5 = rows.get('ENST00000006251.11')!;
    expect(prr5.orfLength).toBe(380); // as written in the file, stop included
    expect(fasta.sequences.get('ENST00000006251.11')!.length).toBe(379);
    expect(fasta.sequences.get('ENST00000006251.11')!.startsWith('MSSPSLSDLGKREP')).toBe(true);
    expect(fasta.stops.has('ENST00000006251.11')).toBe(true);
  });
});

describe('core import of the demo release (real chr22 data)', () => {
  let demo: DemoRelease;
  beforeAll(async () => {
    demo = await demoRelease();
  });
  const db = () => new Database(demo.db, { readonly: true });

  it('has every reference gene and transcript plus every PacBio isoform', () => {
    const d = db();
    const count = (sql: string) => d.prepare(sql).pluck().get();
    expect(count("SELECT count(*) FROM genes WHERE source = 'reference'")).toBe(1388);
    expect(count("SELECT count(DISTINCT symbol) FROM genes WHERE source = 'reference'")).toBe(1359);
    expect(count("SELECT count(*) FROM isoforms WHERE source = 'reference'")).toBe(2428);
    expect(count("SELECT count(*) FROM isoforms WHERE source = 'long_read'")).toBe(3925);
    // 213 distinct SQANTI3 novelGene_… labels become long-read-only genes.
    expect(count("SELECT count(*) FROM genes WHERE source = 'long_read'")).toBe(213);
    d.close();
  });

  it('names reference isoforms SYMBOL-2xx and long-read isoforms SYMBOL-LRn, uniquely', () => {
    const d = db();
    const name = (id: string) =>
      d.prepare('SELECT transcript_name FROM isoforms WHERE transcript_id = ?').pluck().get(id);
    // PRR5's 6 reference transcripts, numbered in transcript id order: ENST00000006251.11 is the first.
    expect(name('ENST00000006251.11')).toBe('PRR5-201');
    // Y_RNA names 13 genes; numbering runs across all of them so names stay unique.
    const yrna = d
      .prepare(
        "SELECT transcript_name FROM isoforms i JOIN genes g USING (gene_id) WHERE g.symbol = 'Y_RNA' ORDER BY 1",
      )
      .pluck()
      .all();
    expect(yrna.length).toBe(13);
    expect(new Set(yrna).size).toBe(13);
    expect(name('PB.3796.1')).toBe('DUXAP8-LR1');
    expect(d.prepare('SELECT count(DISTINCT lower(transcript_name)) FROM isoforms').pluck().get()).toBe(6353);
    d.close();
  });

  it('chooses the longest complete annotated CDS as canonical when there are no tags (PRR5, GSC2)', () => {
    const d = db();
    const canonical = (geneId: string) =>
      d.prepare('SELECT canonical_transcript_id, canonical_rule FROM genes WHERE gene_id = ?').get(geneId);
    // ENST00000403581.5: GENCODE's CDS spans 1,236 nt of its exons (genePred), the longest of PRR5's.
    expect(canonical('ENSG00000186654')).toEqual({
      canonical_transcript_id: 'ENST00000403581.5',
      canonical_rule: 'longest_annotated_cds',
    });
    // GSC2's only transcript has an annotated CDS that SQANTI3 calls non-coding: still the annotation's protein.
    expect(canonical('ENSG00000063515')).toEqual({
      canonical_transcript_id: 'ENST00000086933.3',
      canonical_rule: 'longest_annotated_cds',
    });
    // 442 genes have a transcript with a complete annotated CDS (genePred cmpl/cmpl): all of them take
    // the rule, and no gene with one falls back to a predicted or non-coding canonical.
    const rules = Object.fromEntries(
      (
        d.prepare("SELECT canonical_rule, count(*) AS n FROM genes WHERE source = 'reference' GROUP BY 1").all() as {
          canonical_rule: string;
          n: number;
        }[]
      ).map((r) => [r.canonical_rule, r.n]),
    );
    expect(rules.longest_annotated_cds).toBe(442);
    expect(
      d
        .prepare(
          "SELECT count(*) FROM genes g JOIN isoforms i ON i.transcript_id = g.canonical_transcript_id WHERE g.canonical_rule != 'longest_annotated_cds' AND EXISTS (SELECT 1 FROM isoforms j WHERE j.gene_id = g.gene_id AND json_extract(j.reference_cds, '$.start_status') = 'complete' AND json_extract(j.reference_cds, '$.end_status') = 'complete')",
        )
        .pluck()
        .get(),
    ).toBe(0);
    expect(
      d
        .prepare("SELECT count(*) FROM genes WHERE source = 'reference' AND canonical_transcript_id IS NULL")
        .pluck()
        .get(),
    ).toBe(0);
    d.close();
  });

  it('computes Δlength against the canonical isoform and null for non-coding isoforms', () => {
    const d = db();
    const m = (id: string) =>
      d.prepare('SELECT delta_length, nmd FROM isoform_metrics WHERE transcript_id = ?').get(id) as {
        delta_length: number | null;
        nmd: number | null;
      };
    expect(m('ENST00000403581.5')).toEqual({ delta_length: 0, nmd: 0 }); // the canonical itself
    expect(m('ENST00000006251.11')).toEqual({ delta_length: 379 - 411, nmd: 0 });
    // PB.3808.1: coding, ORF_length 139 with stop → 138 aa, predicted_NMD TRUE, gene ENSG00000128185.
    const canonicalLength = d
      .prepare(
        "SELECT c.protein_length FROM genes g JOIN isoforms c ON c.transcript_id = g.canonical_transcript_id WHERE g.gene_id = 'ENSG00000128185'",
      )
      .pluck()
      .get() as number;
    expect(m('PB.3808.1')).toEqual({ delta_length: 138 - canonicalLength, nmd: 1 });
    // PB.3797.1: a non-coding fusion with NMD NA → both null.
    expect(m('PB.3797.1')).toEqual({ delta_length: null, nmd: null });
    // ENST00000320372.9: predicted_NMD TRUE in the reference classification.
    expect(m('ENST00000320372.9')?.nmd).toBe(1);
    d.close();
  });

  it('attaches fusions to their first gene and keeps every partner', () => {
    const d = db();
    const row = d
      .prepare("SELECT gene_id, associated_genes, structural_category FROM isoforms WHERE transcript_id = 'PB.3797.1'")
      .get();
    expect(row).toEqual({
      gene_id: 'ENSG00000100181',
      associated_genes: '["ENSG00000100181","ENSG00000283633"]',
      structural_category: 'fusion',
    });
    d.close();
  });
});

const V49 = join(__dirname, '../data/gencode-v49/gencode.v49.tusco_subset.gtf.gz');

/** The v49 subset's transcript and gene lines, read with regular expressions rather than the importer:
 * each gene's transcripts tagged MANE_Select and Ensembl_canonical, and its hgnc_id. */
function v49Genes(): Map<string, { mane: string[]; ensemblCanonical: string[]; hgnc: string | null }> {
  const genes = new Map<string, { mane: string[]; ensemblCanonical: string[]; hgnc: string | null }>();
  for (const line of gunzipSync(readFileSync(V49)).toString('utf8').split('\n')) {
    const f = line.split('\t');
    if (f[2] !== 'gene' && f[2] !== 'transcript') continue;
    const geneId = /gene_id "(ENSG\d+)/.exec(f[8])![1];
    const gene = genes.get(geneId) ?? { mane: [], ensemblCanonical: [], hgnc: null };
    genes.set(geneId, gene);
    gene.hgnc ??= /hgnc_id "([^"]+)"/.exec(f[8])?.[1] ?? null;
    if (f[2] !== 'transcript') continue;
    const id = /transcript_id "([^"]+)"/.exec(f[8])![1];
    if (f[8].includes('tag "MANE_Select"')) gene.mane.push(id);
    if (f[8].includes('tag "Ensembl_canonical"')) gene.ensemblCanonical.push(id);
  }
  return genes;
}

describe('core import of GENCODE v49 (names and tags from the GTF)', () => {
  let dir: string;
  let d: Database.Database;
  beforeAll(async () => {
    dir = mkdtempSync(join(tmpdir(), 'isoatlas-v49-'));
    await importCore(loadCoreConfig(join(__dirname, 'fixtures/v49.config.json')), join(dir, 'v49.sqlite'));
    d = new Database(join(dir, 'v49.sqlite'), { readonly: true });
  });
  afterAll(() => {
    d.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it('keeps GTF transcript names and biotypes', () => {
    expect(d.prepare('SELECT count(*) FROM isoforms').pluck().get()).toBe(971);
    expect(d.prepare("SELECT count(*) FROM isoforms WHERE transcript_name_source = 'gtf'").pluck().get()).toBe(971);
    expect(
      d.prepare("SELECT transcript_name FROM isoforms WHERE transcript_id = 'ENST00000900949.1'").pluck().get(),
    ).toBe('SDF4-209');
    expect(d.prepare("SELECT biotype FROM genes WHERE symbol = 'SDF4'").pluck().get()).toBe('protein_coding');
  });

  it('chooses MANE_Select, else Ensembl_canonical', () => {
    const sdf4 = d
      .prepare(
        "SELECT g.canonical_rule, i.transcript_name FROM genes g JOIN isoforms i ON i.transcript_id = g.canonical_transcript_id WHERE g.symbol = 'SDF4'",
      )
      .get();
    expect(sdf4).toEqual({ canonical_rule: 'MANE_Select', transcript_name: 'SDF4-202' });
    const rules = d.prepare('SELECT canonical_rule, count(*) AS n FROM genes GROUP BY 1 ORDER BY 1').all() as {
      canonical_rule: string;
      n: number;
    }[];
    // 137 transcripts carry Ensembl_canonical (one per gene) and no gene needs the length fallback.
    expect(rules.reduce((s, r) => s + r.n, 0)).toBe(141);
    expect(rules.find((r) => r.canonical_rule === 'Ensembl_canonical')?.n).toBeGreaterThan(0);
    const manes = d
      .prepare('SELECT count(*) FROM isoforms WHERE tags LIKE \'%"MANE_Select"%\'')
      .pluck()
      .get() as number;
    expect(rules.find((r) => r.canonical_rule === 'MANE_Select')?.n).toBe(manes);
  });

  it("takes each gene's MANE Select transcript as canonical, else its Ensembl canonical, naming the rule", () => {
    const file = v49Genes();
    const withMane = [...file].filter(([, g]) => g.mane.length > 0);
    const withoutMane = [...file].filter(([, g]) => g.mane.length === 0);
    // MANE Select is one transcript per protein-coding gene: the file never tags two in a gene.
    expect(withMane.every(([, g]) => g.mane.length === 1)).toBe(true);
    expect(withMane.length).toBeGreaterThan(0);
    expect(withoutMane.length).toBeGreaterThan(0);
    const canonical = d.prepare(
      'SELECT canonical_transcript_id AS id, canonical_rule AS rule FROM genes WHERE gene_id = ?',
    );
    for (const [geneId, g] of withMane)
      expect(canonical.get(geneId), geneId).toEqual({ id: g.mane[0], rule: 'MANE_Select' });
    for (const [geneId, g] of withoutMane) {
      const got = canonical.get(geneId) as { id: string; rule: string };
      if (g.ensemblCanonical.length)
        expect(got, geneId).toEqual({ id: g.ensemblCanonical[0], rule: 'Ensembl_canonical' });
      else expect(['longest_coding', 'longest_transcript'], geneId).toContain(got.rule);
    }
    const rules = Object.fromEntries(
      (
        d.prepare('SELECT canonical_rule, count(*) AS n FROM genes GROUP BY 1').all() as {
          canonical_rule: string;
          n: number;
        }[]
      ).map((r) => [r.canonical_rule, r.n]),
    );
    expect(rules.MANE_Select).toBe(withMane.length);
    expect(rules.Ensembl_canonical).toBe(withoutMane.filter(([, g]) => g.ensemblCanonical.length > 0).length);
  });

  it("keeps each gene's hgnc_id and serves it as an HGNC cross-reference", () => {
    const file = v49Genes();
    const stored = new Map(
      (d.prepare('SELECT gene_id, hgnc_id FROM genes').all() as { gene_id: string; hgnc_id: string | null }[]).map(
        (g) => [g.gene_id, g.hgnc_id],
      ),
    );
    expect(stored).toEqual(new Map([...file].map(([id, g]) => [id, g.hgnc])));
    const withHgnc = [...file.values()].filter((g) => g.hgnc !== null).length;
    expect(withHgnc).toBeGreaterThan(0);
    const sdf4 = loadGenes(d).find((g) => g.symbol === 'SDF4')!;
    expect(geneXrefs(sdf4).find((x) => x.database === 'HGNC')).toEqual({
      database: 'HGNC',
      id: 'HGNC:24188',
      url: 'https://www.genenames.org/data/gene-symbol-report/#!/hgnc_id/HGNC:24188',
    });
  });

  it('places the ORF from the CDS and stop codon features and reads cds_start_NF / cds_end_NF', () => {
    const rows = d
      .prepare(
        'SELECT transcript_id, strand, tags, orf_start, orf_end, orf_completeness, orf_source FROM isoforms WHERE coding = 1',
      )
      .all() as Record<string, string | number>[];
    expect(rows.length).toBeGreaterThan(0);
    const located = rows.filter((r) => r.orf_source === 'gtf');
    expect(located.length).toBeGreaterThan(rows.length / 2);
    for (const r of located) {
      const tags = JSON.parse(r.tags as string) as string[];
      if (tags.includes('cds_start_NF'))
        expect(['5prime_partial', 'internal'], String(r.transcript_id)).toContain(r.orf_completeness);
      if (tags.includes('cds_end_NF'))
        expect(['3prime_partial', 'internal'], String(r.transcript_id)).toContain(r.orf_completeness);
    }
    expect(located.some((r) => r.orf_completeness === 'complete')).toBe(true);
  });

  it('states the GTF’s CDS with its stop codon as reference_cds, where the ORF is the same annotation', () => {
    const rows = d
      .prepare("SELECT transcript_id, orf_start, orf_end, reference_cds FROM isoforms WHERE orf_source = 'gtf'")
      .all() as { transcript_id: string; orf_start: number; orf_end: number; reference_cds: string | null }[];
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) {
      const cds = JSON.parse(r.reference_cds!);
      expect([cds.start, cds.end, cds.source], r.transcript_id).toEqual([r.orf_start, r.orf_end, 'gtf']);
    }
    // RTL6-201: CDS features 54258–54974, stop_codon 54255–54257 (minus strand).
    expect(
      JSON.parse(
        d
          .prepare("SELECT reference_cds FROM isoforms WHERE transcript_id = 'ENST00000341255.4'")
          .pluck()
          .get() as string,
      ),
    ).toEqual({ start: 54255, end: 54974, start_status: 'complete', end_status: 'complete', source: 'gtf' });
    expect(
      d
        .prepare("SELECT count(*) FROM isoforms WHERE transcript_type = 'lncRNA' AND reference_cds IS NOT NULL")
        .pluck()
        .get(),
    ).toBe(0);
  });

  it('calls NMD from transcript_type and measures proteins from CDS features', () => {
    expect(
      d
        .prepare("SELECT count(*) FROM isoforms WHERE transcript_type = 'nonsense_mediated_decay' AND nmd = 1")
        .pluck()
        .get(),
    ).toBe(74);
    expect(
      d.prepare("SELECT count(*) FROM isoforms WHERE transcript_type = 'protein_coding' AND nmd = 0").pluck().get(),
    ).toBeGreaterThan(0);
    expect(
      d
        .prepare(
          "SELECT count(*) FROM isoforms WHERE transcript_type = 'lncRNA' AND (nmd IS NOT NULL OR protein_length IS NOT NULL)",
        )
        .pluck()
        .get(),
    ).toBe(0);
    // SDF4-202's CDS lines in this region-clipped subset sum to 305 nt (awk): floor(305 / 3) = 101 aa.
    expect(d.prepare("SELECT coding, protein_length FROM isoforms WHERE transcript_name = 'SDF4-202'").get()).toEqual({
      coding: 1,
      protein_length: 101,
    });
    // SDF4-204 is protein_coding_CDS_not_defined: no CDS lines, so not coding.
    expect(d.prepare("SELECT coding, protein_length FROM isoforms WHERE transcript_name = 'SDF4-204'").get()).toEqual({
      coding: 0,
      protein_length: null,
    });
  });
});
