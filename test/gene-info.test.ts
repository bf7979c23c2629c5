// Gene names, synonyms and cross-references: the org.Hs.eg.db extract in data/gene-info as the demo
// serves it, HGNC's complete-set format, and the non-coding-biotype flag they feed.
import { describe, expect, it, inject } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import type { GeneBody, IsoformBody } from '../edge/contract/schemas.js';
import { treePaths } from '../edge/contract/tree.js';
import { importGeneInfo, readGeneInfo } from '../build/import/gene-info.js';
import { InputError } from '../build/import/input.js';
import { validate } from './helpers/schemas.js';

const EXTRACT = join(__dirname, '../data/gene-info/org.Hs.eg.db.chr22.tsv.gz');
const tree = () => inject('demoTree');
const json = <T>(path: string) => JSON.parse(readFileSync(join(tree(), path), 'utf8')) as T;

/** The extract's rows, split by hand. */
function extractRows(): Record<string, string>[] {
  const [head, ...rows] = gunzipSync(readFileSync(EXTRACT))
    .toString('utf8')
    .trimEnd()
    .split('\n')
    .map((l) => l.split('\t'));
  return rows.map((r) => Object.fromEntries(head.map((h, i) => [h, r[i]])));
}

describe('gene records of the demo release', () => {
  it('MAPK1 carries the name, synonyms and accessions of its org.Hs.eg.db record, with links', () => {
    const row = extractRows().find((r) => r.ensembl_gene_id === 'ENSG00000100030')!;
    const gene = json<GeneBody>(treePaths.gene('ENSG00000100030'));
    expect(validate('Gene', gene)).toEqual([]);
    expect(gene.name).toBe(row.name);
    expect(gene.name).toBe('mitogen-activated protein kinase 1');
    expect(gene.synonyms).toEqual(row.synonyms.split('|').sort());
    expect(gene.synonyms).toContain('ERK2');
    expect(gene.gene_type).toBe('protein-coding');
    const byDb = (db: string) => gene.xrefs.filter((x) => x.database === db).map((x) => x.id);
    expect(byDb('Ensembl')).toEqual(['ENSG00000100030']);
    expect(byDb('NCBI Gene')).toEqual(['5594']);
    expect(byDb('UniProt')).toEqual(row.uniprot_ids.split('|').sort());
    expect(byDb('UniProt')).toContain('P28482');
    expect(byDb('AlphaFold DB')).toEqual(byDb('UniProt'));
    expect(gene.xrefs.find((x) => x.database === 'AlphaFold DB' && x.id === 'P28482')!.url).toBe(
      'https://alphafold.ebi.ac.uk/entry/P28482',
    );
    expect(gene.xrefs.find((x) => x.database === 'NCBI Gene')!.url).toBe('https://www.ncbi.nlm.nih.gov/gene/5594');
  });

  it('every gene the extract names once carries its record; genes it does not name have none', () => {
    const rows = extractRows();
    const counts = new Map<string, number>();
    for (const r of rows) counts.set(r.ensembl_gene_id, (counts.get(r.ensembl_gene_id) ?? 0) + 1);
    let checked = 0;
    for (const [id, n] of counts) {
      const gene = json<GeneBody>(treePaths.gene(id));
      if (n === 1) {
        const row = rows.find((r) => r.ensembl_gene_id === id)!;
        expect(gene.name, id).toBe(row.name);
        expect(gene.xrefs.find((x) => x.database === 'NCBI Gene')?.id, id).toBe(row.ncbi_gene_id);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(900);
    const none = json<GeneBody>(treePaths.gene('ENSG00000100030')); // named: has them
    expect(none.xrefs.length).toBeGreaterThan(1);
  });

  it('flags predicted ORFs on non-coding genes: FRG1FP (pseudogene), LINC01634 and PPM1F-AS1 (ncRNA)', () => {
    for (const [geneId, type] of [
      ['ENSG00000283047', 'pseudo'],
      ['ENSG00000235295', 'ncRNA'],
      ['ENSG00000224086', 'ncRNA'],
    ]) {
      const gene = json<GeneBody>(treePaths.gene(geneId));
      expect(gene.gene_type, gene.symbol).toBe(type);
      const coding = gene.isoforms.filter((i) => i.protein_length !== null);
      expect(coding.length, gene.symbol).toBeGreaterThan(0);
      for (const i of coding)
        expect(json<IsoformBody>(treePaths.isoform(i.transcript_id)).orf!.noncoding_biotype, i.transcript_name).toBe(
          true,
        );
    }
    expect(json<IsoformBody>(treePaths.isoform('ENST00000215832.11')).orf!.noncoding_biotype).toBe(false);
    // NCBI files immunoglobulin segments under "other": that says nothing either way.
    expect(json<IsoformBody>(treePaths.isoform('ENST00000390285.4')).orf!.noncoding_biotype).toBeNull();
  });
});

describe('import gene-info', () => {
  const HGNC_HEADER = [
    'hgnc_id',
    'symbol',
    'name',
    'locus_group',
    'locus_type',
    'status',
    'alias_symbol',
    'prev_symbol',
    'entrez_id',
    'ensembl_gene_id',
    'uniprot_ids',
  ];

  it("reads HGNC's complete set: quoted |-lists, aliases and previous symbols as synonyms, HGNC ids", async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-hgnc-'));
    try {
      const file = join(dir, 'hgnc_complete_set.txt');
      writeFileSync(
        file,
        [
          HGNC_HEADER.join('\t'),
          [
            'HGNC:16627',
            'CHEK2',
            'checkpoint kinase 2',
            'protein-coding gene',
            'gene with protein product',
            'Approved',
            '"CDS1|RAD53|CHK2"',
            '',
            '11200',
            'ENSG00000183765',
            'O96017',
          ].join('\t'),
          ['HGNC:1', 'NOENS', 'no Ensembl gene', 'other', 'unknown', 'Approved', '', '', '', '', ''].join('\t'),
        ].join('\n') + '\n',
      );
      const { format, rows } = await readGeneInfo(file);
      expect(format).toBe('hgnc');
      expect(rows).toHaveLength(1);
      expect(rows[0]).toMatchObject({
        gene_id: 'ENSG00000183765',
        symbol: 'CHEK2',
        hgnc_id: 'HGNC:16627',
        ncbi_gene_id: '11200',
        synonyms: ['CDS1', 'CHK2', 'RAD53'],
        uniprot_ids: ['O96017'],
        gene_type: 'protein-coding gene',
      });

      // Into a copy of the demo release: it replaces the gene info the demo had.
      const copy = join(dir, 'release.sqlite');
      copyFileSync(inject('demoDb'), copy);
      const db = new Database(copy);
      try {
        const s = await importGeneInfo(db, { file, source: 'HGNC complete set' });
        expect(s).toEqual({ format: 'hgnc', genes: 1, unmatched: 0, ambiguous: [] });
        expect(db.prepare('SELECT gene_id, hgnc_id, synonyms FROM gene_info').all()).toEqual([
          { gene_id: 'ENSG00000183765', hgnc_id: 'HGNC:16627', synonyms: '["CDS1","CHK2","RAD53"]' },
        ]);
        expect(db.prepare("SELECT source, records FROM track_sources WHERE track = 'gene_info'").all()).toEqual([
          { source: 'HGNC complete set', records: 1 },
        ]);
      } finally {
        db.close();
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('refuses a malformed id naming file, line and column', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-geneinfo-'));
    try {
      const file = join(dir, 'genes.tsv');
      writeFileSync(
        file,
        'ensembl_gene_id\tncbi_gene_id\thgnc_id\tsymbol\tname\tgene_type\tsynonyms\tuniprot_ids\nENSG00000100030\tabc\t\tMAPK1\tx\t\t\t\n',
      );
      const err = await readGeneInfo(file).catch((e) => e);
      expect(err).toBeInstanceOf(InputError);
      expect(err.message).toBe(`${file}:2: column "ncbi_gene_id": expected a numeric NCBI Gene id, found "abc"`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
