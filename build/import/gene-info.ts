// `isoatlas import gene-info`: full names, synonyms, biotype and cross-references of the release's
// genes, from one of two tab-separated formats (told apart by their header):
//   - isoatlas gene-info TSV (data/README.md): ensembl_gene_id, ncbi_gene_id, hgnc_id, symbol, name,
//     gene_type, synonyms, uniprot_ids [, matched_by, record_chromosomes, record_ensembl_ids] — what
//     data/gene-info/extract.sh writes from Bioconductor's org.Hs.eg.db;
//   - HGNC's complete set (hgnc_complete_set.txt): hgnc_id, symbol, name, locus_group, alias_symbol,
//     prev_symbol, entrez_id, ensembl_gene_id, uniprot_ids, … (others ignored).
// Multi-valued cells are `|`-separated (HGNC quotes them: "A|B"). Rows are matched to genes by
// unversioned Ensembl gene id. A row that contradicts the annotation (xref-agreement.ts: the record
// lies elsewhere, is linked to another gene, or carries another gene's name) is refused. Where several
// rows name one gene, the row whose symbol is the gene's symbol wins; otherwise the gene is left
// without and counted as ambiguous. The import replaces any gene info the release had.
import { basename } from 'node:path';
import { InputError, readLines, readTsv, sha256File } from './input.js';
import type { Db } from '../release-db/database.js';
import type { GeneInfo } from '../release-db/records.js';
import {
  checkAgreement,
  type AnnotatedGene,
  type AnnotatedGenes,
  type Refusal,
  type XrefRow,
} from './xref-agreement.js';

export interface GeneInfoRecord extends GeneInfo, XrefRow {
  line: number;
}

/** The isoatlas gene-info TSV's columns (the synthetic human-scale release writes them too). */
export const GENE_INFO_COLUMNS = [
  'ensembl_gene_id',
  'ncbi_gene_id',
  'hgnc_id',
  'symbol',
  'name',
  'gene_type',
  'synonyms',
  'uniprot_ids',
] as const;
const HGNC_COLUMNS = [
  'hgnc_id',
  'symbol',
  'name',
  'locus_group',
  'alias_symbol',
  'prev_symbol',
  'entrez_id',
  'ensembl_gene_id',
  'uniprot_ids',
] as const;

const list = (cell: string | undefined): string[] => {
  const text = (cell ?? '').trim().replace(/^"(.*)"$/, '$1');
  return text === ''
    ? []
    : text
        .split('|')
        .map((v) => v.trim())
        .filter(Boolean);
};
const one = (cell: string | undefined): string | null => list(cell)[0] ?? null;

async function headerOf(path: string): Promise<string[]> {
  for await (const [, text] of readLines(path)) {
    if (text !== '' && !text.startsWith('#')) return text.split('\t');
  }
  throw new InputError(path, null, 'file is empty: expected a header row');
}

/** Reads either format; says which it found. */
export async function readGeneInfo(path: string): Promise<{ format: 'isoatlas' | 'hgnc'; rows: GeneInfoRecord[] }> {
  const header = await headerOf(path);
  const format = header.includes('locus_group') && header.includes('entrez_id') ? 'hgnc' : 'isoatlas';
  const required = format === 'hgnc' ? HGNC_COLUMNS : GENE_INFO_COLUMNS;
  const rows: GeneInfoRecord[] = [];
  for await (const { line, row } of readTsv(path, { required })) {
    const ensembl = one(row.ensembl_gene_id);
    if (!ensembl) continue; // HGNC lists genes Ensembl does not have
    if (!/^ENSG\d+(\.\d+)?$/.test(ensembl))
      throw new InputError(path, line, `expected an Ensembl gene id (ENSG…), found "${ensembl}"`, 'ensembl_gene_id');
    const symbol = one(row.symbol);
    if (!symbol) throw new InputError(path, line, 'a symbol is required', 'symbol');
    const ncbi = one(format === 'hgnc' ? row.entrez_id : row.ncbi_gene_id);
    if (ncbi !== null && !/^\d+$/.test(ncbi))
      throw new InputError(
        path,
        line,
        `expected a numeric NCBI Gene id, found "${ncbi}"`,
        format === 'hgnc' ? 'entrez_id' : 'ncbi_gene_id',
      );
    const hgnc = one(row.hgnc_id);
    if (hgnc !== null && !/^HGNC:\d+$/.test(hgnc))
      throw new InputError(path, line, `expected an HGNC id (HGNC:n), found "${hgnc}"`, 'hgnc_id');
    const linked = list(row.record_ensembl_ids);
    const badLink = linked.find((id) => !/^ENSG\d+(\.\d+)?$/.test(id));
    if (badLink)
      throw new InputError(path, line, `expected Ensembl gene ids (ENSG…), found "${badLink}"`, 'record_ensembl_ids');
    const synonyms = format === 'hgnc' ? [...list(row.alias_symbol), ...list(row.prev_symbol)] : list(row.synonyms);
    rows.push({
      gene_id: ensembl.replace(/\.\d+$/, ''),
      symbol,
      name: (row.name ?? '').trim().replace(/^"(.*)"$/, '$1') || null,
      synonyms: [...new Set(synonyms.filter((s) => s !== symbol))].sort(),
      gene_type: one(format === 'hgnc' ? row.locus_group : row.gene_type),
      ncbi_gene_id: ncbi,
      hgnc_id: hgnc,
      uniprot_ids: [...new Set(list(row.uniprot_ids))].sort(),
      matched_by: one(row.matched_by),
      record_chromosomes: list(row.record_chromosomes).map((c) => c.replace(/^chr/i, '')),
      record_ensembl_ids: linked.map((id) => id.replace(/\.\d+$/, '')),
      line,
    });
  }
  return { format, rows };
}

export interface GeneInfoSummary {
  format: 'isoatlas' | 'hgnc';
  genes: number;
  /** Rows naming no gene of the release. */
  unmatched: number;
  /** Genes named by several rows, none with the gene's symbol: left without. */
  ambiguous: string[];
  /** Rows refused because they contradict the annotation, with why (gene id order). */
  refused: Refusal[];
}

/** Replaces the release's gene info with the file's (one transaction, with the track source). */
export async function importGeneInfo(
  db: Db,
  input: {
    file: string;
    source: string;
    version?: string;
    description?: string;
    allowEmpty?: boolean;
    /** Made by a generator (the synthetic human-scale release's names), not read from a real source. */
    generated?: boolean;
  },
): Promise<GeneInfoSummary> {
  const { format, rows } = await readGeneInfo(input.file);
  // It replaces what the release had: an empty file would clear it, more often by mistake than not.
  if (rows.length === 0 && !input.allowEmpty)
    throw new InputError(
      input.file,
      null,
      'no rows of gene info (a header alone); the release was not changed: pass --allow-empty to clear the gene info on purpose',
    );
  // The release's genes are looked up, not loaded: a release can have many more than the file has rows.
  const byId = db.prepare('SELECT gene_id, symbol, chromosome, hgnc_id FROM genes WHERE gene_id = ?');
  const symbolCount = db
    .prepare('SELECT count(*) FROM genes WHERE symbol = @symbol COLLATE NOCASE AND symbol = @symbol')
    .pluck();
  const genes: AnnotatedGenes = {
    get: (id) => byId.get(id) as AnnotatedGene | undefined,
    withSymbol: (symbol) => symbolCount.get({ symbol }) as number,
  };
  const named = rows.filter((r) => genes.get(r.gene_id) !== undefined);
  const unmatched = rows.length - named.length;
  const { agreeing, refused } = checkAgreement(named, genes);
  const byGene = new Map<string, GeneInfoRecord[]>();
  for (const r of agreeing) byGene.set(r.gene_id, [...(byGene.get(r.gene_id) ?? []), r]);
  const chosen: GeneInfoRecord[] = [];
  const ambiguous: string[] = [];
  for (const [geneId, candidates] of byGene) {
    const pick =
      candidates.length === 1 ? candidates : candidates.filter((c) => c.symbol === genes.get(geneId)!.symbol);
    if (pick.length === 1) chosen.push(pick[0]);
    else ambiguous.push(geneId);
  }
  const sha = await sha256File(input.file);
  db.transaction(() => {
    db.prepare('DELETE FROM gene_info').run();
    db.prepare("DELETE FROM track_sources WHERE track = 'gene_info'").run();
    const insert = db.prepare(
      'INSERT INTO gene_info (gene_id, name, synonyms, gene_type, ncbi_gene_id, hgnc_id, uniprot_ids) VALUES (?, ?, ?, ?, ?, ?, ?)',
    );
    for (const r of chosen.sort((a, b) => (a.gene_id < b.gene_id ? -1 : 1))) {
      insert.run(
        r.gene_id,
        r.name,
        JSON.stringify(r.synonyms),
        r.gene_type,
        r.ncbi_gene_id,
        r.hgnc_id,
        JSON.stringify(r.uniprot_ids),
      );
    }
    db.prepare(
      'INSERT INTO track_sources (track, source, version, generated, description, input_file, input_sha256, records) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      'gene_info',
      input.source,
      input.version ?? null,
      input.generated ? 1 : 0,
      input.description ?? null,
      basename(input.file),
      sha,
      chosen.length,
    );
  })();
  return { format, genes: chosen.length, unmatched, ambiguous: ambiguous.sort(), refused };
}
