// Gene names, synonyms and cross-references: the org.Hs.eg.db extract in data/gene-info as the demo
// serves it, HGNC's complete-set format, and the non-coding-biotype flag they feed.
import { beforeAll, describe, expect, it, inject } from 'vitest';
import { copyFileSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { gunzipSync } from 'node:zlib';
import Database from 'better-sqlite3';
import type { GeneBody, IsoformBody } from '../edge/contract/schemas.js';
import { treePaths } from '../edge/contract/tree.js';
import { importGeneInfo, readGeneInfo } from '../build/import/gene-info.js';
import { checkAgreement } from '../build/import/xref-agreement.js';
import { InputError } from '../build/import/input.js';
import { validate } from './helpers/schemas.js';
import { demoRelease, type DemoRelease } from './helpers/demo-release.js';

const EXTRACT = join(__dirname, '../data/gene-info/org.Hs.eg.db.chr22.tsv.gz');
const GTF = join(__dirname, '../data/chr22/gencode.v38.basic_chr22_corrected.gtf.gz');
// The demo's whole tree: these checks hold every record of the real chr22 data against its input.
let demo: DemoRelease;
beforeAll(async () => {
  demo = await demoRelease();
});
const tree = () => demo.tree;
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

/** Each gene of the demo GTF: its symbol, and how many genes carry each symbol. */
function gtfGenes(): { symbols: Map<string, string>; carriers: Map<string, number> } {
  const symbols = new Map<string, string>();
  for (const line of gunzipSync(readFileSync(GTF)).toString('utf8').split('\n')) {
    const m = /gene_id "(ENSG\d+)[^"]*"; gene_name "([^"]*)"/.exec(line);
    if (m) symbols.set(m[1], m[2]);
  }
  const carriers = new Map<string, number>();
  for (const s of symbols.values()) carriers.set(s, (carriers.get(s) ?? 0) + 1);
  return { symbols, carriers };
}

/** Whether an extract row contradicts the annotation, stated over the inputs themselves: its NCBI record
 * lies off chr22, or names Ensembl genes other than this one, or carries a symbol that GENCODE gives
 * another gene (and not this one), or was matched by a symbol several genes carry. */
function contradicts(row: Record<string, string>, symbols: Map<string, string>): boolean {
  const own = symbols.get(row.ensembl_gene_id)!;
  const chromosomes = row.record_chromosomes ? row.record_chromosomes.split('|') : [];
  const links = row.record_ensembl_ids ? row.record_ensembl_ids.split('|') : [];
  const carriers = [...symbols.values()].filter((s) => s === row.symbol).length;
  return (
    (chromosomes.length > 0 && !chromosomes.includes('22')) ||
    (links.length > 0 && !links.includes(row.ensembl_gene_id)) ||
    (row.symbol !== own && carriers > 0) ||
    (row.matched_by === 'symbol' && carriers > 1)
  );
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

  it('every gene the extract names once carries its record, unless the record contradicts the annotation', () => {
    const rows = extractRows();
    const { symbols } = gtfGenes();
    const counts = new Map<string, number>();
    for (const r of rows) counts.set(r.ensembl_gene_id, (counts.get(r.ensembl_gene_id) ?? 0) + 1);
    let checked = 0;
    for (const [id, n] of counts) {
      const gene = json<GeneBody>(treePaths.gene(id));
      if (n === 1 && !contradicts(rows.find((r) => r.ensembl_gene_id === id)!, symbols)) {
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
    // NCBI files immunoglobulin segments under "other", which says nothing either way; GENCODE annotates
    // IGLV6-57-201's CDS (genePred, 3' incomplete), so its ORF is not on a non-coding biotype.
    const iglv = json<IsoformBody>(treePaths.isoform('ENST00000390285.4'));
    expect(iglv.reference_cds).not.toBeNull();
    expect(iglv.orf!.noncoding_biotype).toBe(false);
  });

  it('reads NCBI’s "other" as unknown: null where no annotated CDS says coding (docs/API.md’s figures)', () => {
    const flags = new Map<string, boolean | null>();
    let genes = 0;
    for (const row of extractRows().filter((r) => r.gene_type === 'other')) {
      const gene = json<GeneBody>(treePaths.gene(row.ensembl_gene_id));
      if (gene.gene_type !== 'other') continue; // a refused row: the gene keeps no NCBI type
      genes++;
      for (const i of gene.isoforms.filter((i) => i.source === 'reference' && i.protein_length !== null))
        flags.set(i.transcript_name, json<IsoformBody>(treePaths.isoform(i.transcript_id)).orf!.noncoding_biotype);
    }
    expect(genes).toBeGreaterThan(0);
    const unknown = [...flags].filter(([, flag]) => flag === null).map(([name]) => name);
    expect(unknown).toEqual(['IGKV1OR22-5-201']);
    expect([...flags.values()].filter((flag) => flag === false)).toHaveLength(40);
    expect(flags.size).toBe(41);
  });
});

describe('cross-references that agree with the annotation (demo release)', () => {
  const ncbiOf = (gene: GeneBody) => gene.xrefs.find((x) => x.database === 'NCBI Gene')?.id ?? null;
  /** What the demo serves: gene id → NCBI Gene id, for every gene of the extract. */
  function served(): Map<string, string | null> {
    const out = new Map<string, string | null>();
    for (const r of extractRows())
      out.set(r.ensembl_gene_id, ncbiOf(json<GeneBody>(treePaths.gene(r.ensembl_gene_id))));
    return out;
  }
  /** The rows a symbol-only choice (the importer before this check) would serve: a gene's only row,
   * else its row with the gene's symbol. */
  function symbolOnlyChoice(symbols: Map<string, string>): Record<string, string>[] {
    const byGene = new Map<string, Record<string, string>[]>();
    for (const r of extractRows()) byGene.set(r.ensembl_gene_id, [...(byGene.get(r.ensembl_gene_id) ?? []), r]);
    return [...byGene].flatMap(([id, rows]) => {
      const pick = rows.length === 1 ? rows : rows.filter((r) => r.symbol === symbols.get(id));
      return pick.length === 1 ? pick : [];
    });
  }
  /** NCBI ids on several genes, each with those genes. */
  function shared(pairs: [string, string][]): Map<string, string[]> {
    const genesOf = new Map<string, string[]>();
    for (const [gene, ncbi] of pairs) genesOf.set(ncbi, [...(genesOf.get(ncbi) ?? []), gene]);
    return new Map([...genesOf].filter(([, genes]) => genes.length > 1));
  }

  it('serves no record that contradicts its own links, chromosome or the gene names (the old choice served some)', () => {
    const { symbols } = gtfGenes();
    const rows = extractRows();
    const old = symbolOnlyChoice(symbols).filter((r) => contradicts(r, symbols));
    // The inputs hold contradictions a symbol-only choice serves, among them the examples.
    expect(old.length).toBeGreaterThan(0);
    const oldPairs = old.map((r) => `${r.ensembl_gene_id} ${r.ncbi_gene_id}`);
    expect(oldPairs).toContain('ENSG00000280263 440888'); // ACTR3BP6 ← ACTR3BP2, chromosome 2
    expect(oldPairs).toContain('ENSG00000243519 84086'); // IGLVIVOR22-2 ← IGLCOR22-2
    const now = served();
    const contradicting = rows.filter((r) => now.get(r.ensembl_gene_id) === r.ncbi_gene_id && contradicts(r, symbols));
    expect(contradicting.map((r) => `${r.ensembl_gene_id} ${r.symbol}`)).toEqual([]);
  });

  it('ACTR3BP6 carries nothing of ACTR3BP2; IGLVIVOR22-2 is not named as IGLCOR22-2', () => {
    const actr = json<GeneBody>(treePaths.gene('ENSG00000280263'));
    expect(actr.symbol).toBe('ACTR3BP6');
    expect(ncbiOf(actr)).toBeNull();
    expect(actr.name).toBeNull();
    const iglv = json<GeneBody>(treePaths.gene('ENSG00000243519'));
    expect(iglv.symbol).toBe('IGLVIVOR22-2');
    expect(iglv.name).toBeNull();
    expect(iglv.synonyms).toEqual([]);
    expect(ncbiOf(iglv)).toBeNull();
  });

  it('an NCBI id sits on two genes only where its own Ensembl links name both', () => {
    const { symbols } = gtfGenes();
    const rows = extractRows();
    const linksOf = new Map(rows.map((r) => [r.ncbi_gene_id, r.record_ensembl_ids.split('|')]));
    // Before: the extract ties NCBI ids to two genes each, and the symbol-only choice serves some
    // of them on genes their records' links do not name.
    const before = shared(rows.map((r) => [r.ensembl_gene_id, r.ncbi_gene_id]));
    const names = [...before.keys()].map((id) => rows.find((r) => r.ncbi_gene_id === id)!.symbol);
    expect(names).toEqual(expect.arrayContaining(['DGCR5', 'RNU12', 'IGLCOR22-2', 'DUXAP8']));
    const oldShared = shared(symbolOnlyChoice(symbols).map((r) => [r.ensembl_gene_id, r.ncbi_gene_id]));
    const unlinked = (m: Map<string, string[]>) =>
      [...m].filter(([id, genes]) => !genes.every((g) => linksOf.get(id)!.includes(g))).map(([id]) => id);
    expect(unlinked(oldShared).length).toBeGreaterThan(0);
    // Now: none is on a gene its links do not name.
    const now = shared([...served()].filter((e): e is [string, string] => e[1] !== null));
    expect(unlinked(now)).toEqual([]);
    // DGCR5 goes to the DGCR5 gene NCBI links it to, not to the other gene GENCODE also names DGCR5.
    expect(now.get('26220')).toBeUndefined();
    expect(ncbiOf(json<GeneBody>(treePaths.gene('ENSG00000273032')))).toBe('26220');
    expect(ncbiOf(json<GeneBody>(treePaths.gene('ENSG00000237517')))).toBeNull();
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
      copyFileSync(inject('fixtureDb'), copy);
      const db = new Database(copy);
      try {
        const s = await importGeneInfo(db, { file, source: 'HGNC complete set' });
        expect(s).toEqual({ format: 'hgnc', genes: 1, unmatched: 0, ambiguous: [], refused: [] });
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

  it("refuses a row whose HGNC id is not the GTF's; reads chromosomes with or without chr", () => {
    const genes = new Map([
      ['ENSG00000078808', { gene_id: 'ENSG00000078808', symbol: 'SDF4', chromosome: 'chr1', hgnc_id: 'HGNC:24188' }],
    ]);
    const row = {
      gene_id: 'ENSG00000078808',
      symbol: 'SDF4',
      ncbi_gene_id: '51150',
      hgnc_id: 'HGNC:24188',
      matched_by: 'ensembl',
      record_chromosomes: ['1'],
      record_ensembl_ids: ['ENSG00000078808'],
    };
    expect(checkAgreement([row], genes).refused).toEqual([]);
    expect(checkAgreement([{ ...row, hgnc_id: 'HGNC:1' }], genes).refused).toEqual([
      { gene_id: 'ENSG00000078808', symbol: 'SDF4', ncbi_gene_id: '51150', reason: 'hgnc_disagrees' },
    ]);
    expect(checkAgreement([{ ...row, record_chromosomes: ['2'] }], genes).refused[0]?.reason).toBe('other_chromosome');
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
