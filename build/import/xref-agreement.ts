// Which gene-info rows agree with the release's own annotation. A row names an outside record (NCBI
// Gene, HGNC) for one Ensembl gene; it is refused when the record itself, or the annotation, says it
// belongs elsewhere, because serving it would put another gene's name and ids on this one:
//   - other_chromosome: the record lies on chromosomes that are not the gene's;
//   - linked_elsewhere: the record's own Ensembl links name other genes and not this one (a match
//     by symbol that the record's links contradict);
//   - symbol_of_another_gene: the record's symbol is not the gene's but another gene's of the release;
//   - symbol_ambiguous: a match by symbol where several genes of the release carry that symbol;
//   - hgnc_disagrees: the record's HGNC id is not the one the annotation gives the gene.
// A row without the facts a rule reads (an HGNC row has no record_ensembl_ids) is not judged by it.

export type RefusalReason =
  | 'other_chromosome'
  | 'linked_elsewhere'
  | 'symbol_of_another_gene'
  | 'symbol_ambiguous'
  | 'hgnc_disagrees';

export interface XrefRow {
  gene_id: string;
  symbol: string;
  ncbi_gene_id: string | null;
  hgnc_id: string | null;
  /** How the row was tied to its Ensembl id (`ensembl`, `symbol`), where the file says. */
  matched_by: string | null;
  /** Chromosomes the record lies on, without a `chr` prefix; empty where unknown. */
  record_chromosomes: string[];
  /** Every Ensembl gene (unversioned) the record's source links the record to; empty where unknown. */
  record_ensembl_ids: string[];
}

export interface AnnotatedGene {
  gene_id: string;
  symbol: string;
  chromosome: string;
  hgnc_id: string | null;
}

export interface Refusal {
  gene_id: string;
  symbol: string;
  ncbi_gene_id: string | null;
  reason: RefusalReason;
}

/** The release's genes, as the rules read them: one by id, and how many carry a symbol. */
export interface AnnotatedGenes {
  get(geneId: string): AnnotatedGene | undefined;
  withSymbol(symbol: string): number;
}

/** Genes held in a map (tests, small releases); the import looks them up in the release instead. */
function genesOfMap(genes: Map<string, AnnotatedGene>): AnnotatedGenes {
  const bySymbol = new Map<string, number>();
  for (const g of genes.values()) bySymbol.set(g.symbol, (bySymbol.get(g.symbol) ?? 0) + 1);
  return { get: (id) => genes.get(id), withSymbol: (symbol) => bySymbol.get(symbol) ?? 0 };
}

const bareChromosome = (name: string) => name.replace(/^chr/i, '');

/** The first rule a row breaks, or null when it agrees with the annotation. */
function disagreement(row: XrefRow, gene: AnnotatedGene, genes: AnnotatedGenes): RefusalReason | null {
  if (row.record_chromosomes.length && !row.record_chromosomes.includes(bareChromosome(gene.chromosome)))
    return 'other_chromosome';
  if (row.record_ensembl_ids.length && !row.record_ensembl_ids.includes(gene.gene_id)) return 'linked_elsewhere';
  if (row.symbol !== gene.symbol && genes.withSymbol(row.symbol) > 0) return 'symbol_of_another_gene';
  if (row.matched_by === 'symbol' && genes.withSymbol(row.symbol) > 1) return 'symbol_ambiguous';
  if (row.hgnc_id && gene.hgnc_id && row.hgnc_id !== gene.hgnc_id) return 'hgnc_disagrees';
  return null;
}

/** Splits rows (each naming a gene of `genes`) into those that agree and those refused, with why. */
export function checkAgreement<R extends XrefRow>(
  rows: R[],
  release: Map<string, AnnotatedGene> | AnnotatedGenes,
): { agreeing: R[]; refused: Refusal[] } {
  const genes = release instanceof Map ? genesOfMap(release) : release;
  const agreeing: R[] = [];
  const refused: Refusal[] = [];
  for (const row of rows) {
    const gene = genes.get(row.gene_id);
    if (!gene) throw new Error(`checkAgreement: ${row.gene_id} is not a gene of the release`);
    const reason = disagreement(row, gene, genes);
    if (reason) refused.push({ gene_id: row.gene_id, symbol: row.symbol, ncbi_gene_id: row.ncbi_gene_id, reason });
    else agreeing.push(row);
  }
  return { agreeing, refused };
}
