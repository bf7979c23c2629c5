// Gene records (`/genes/{symbol}`) and each gene's isoform list pre-split into pages of
// ISOFORM_PAGE_SIZE (`/genes/{symbol}/isoforms`); the edge slices any limit/offset from these pages.
import { ISOFORM_PAGE_SIZE, links, treePaths } from '../../edge/contract/tree.js';
import type { GeneBody, IsoformPageBody, XrefBody } from '../../edge/contract/schemas.js';
import type { GeneRow, IsoformRow } from './load.js';
import { isoformSummary } from './isoforms.js';
import { TreeWriter } from './tree-writer.js';

/** Links to the gene's records elsewhere, from its ids. AlphaFold DB files models by UniProt accession. */
export function geneXrefs(gene: GeneRow): XrefBody[] {
  const out: XrefBody[] = [];
  if (/^ENSG\d+$/.test(gene.gene_id)) out.push({ database: 'Ensembl', id: gene.gene_id, url: `https://www.ensembl.org/Homo_sapiens/Gene/Summary?g=${gene.gene_id}` });
  if (gene.ncbi_gene_id) out.push({ database: 'NCBI Gene', id: gene.ncbi_gene_id, url: `https://www.ncbi.nlm.nih.gov/gene/${gene.ncbi_gene_id}` });
  if (gene.hgnc_id) out.push({ database: 'HGNC', id: gene.hgnc_id, url: `https://www.genenames.org/data/gene-symbol-report/#!/hgnc_id/${gene.hgnc_id}` });
  for (const acc of gene.uniprot_ids) out.push({ database: 'UniProt', id: acc, url: `https://www.uniprot.org/uniprotkb/${acc}/entry` });
  for (const acc of gene.uniprot_ids) out.push({ database: 'AlphaFold DB', id: acc, url: `https://alphafold.ebi.ac.uk/entry/${acc}` });
  return out;
}

export function geneRecord(gene: GeneRow, isoforms: IsoformRow[]): GeneBody {
  const canonical = isoforms.find((i) => i.canonical);
  return {
    gene_id: gene.gene_id,
    gene_id_versioned: gene.gene_id_versioned,
    symbol: gene.symbol,
    name: gene.name,
    synonyms: gene.synonyms,
    biotype: gene.biotype,
    gene_type: gene.gene_type,
    xrefs: geneXrefs(gene),
    source: gene.source,
    chromosome: gene.chromosome,
    strand: gene.strand,
    start: gene.start,
    end: gene.end,
    canonical_isoform:
      canonical && gene.canonical_rule
        ? { transcript_id: canonical.transcript_id, transcript_name: canonical.transcript_name, rule: gene.canonical_rule }
        : null,
    isoform_count: isoforms.length,
    isoforms: isoforms.map(isoformSummary),
    links: { self: links.gene(gene.gene_id), isoforms: links.geneIsoforms(gene.gene_id) },
  };
}

export function isoformPages(gene: GeneRow, isoforms: IsoformRow[]): IsoformPageBody[] {
  const pages: IsoformPageBody[] = [];
  const total = isoforms.length;
  for (let offset = 0; offset < total || (total === 0 && offset === 0); offset += ISOFORM_PAGE_SIZE) {
    const next = offset + ISOFORM_PAGE_SIZE;
    pages.push({
      gene_id: gene.gene_id,
      symbol: gene.symbol,
      total,
      limit: ISOFORM_PAGE_SIZE,
      offset,
      next: next < total ? links.geneIsoforms(gene.gene_id, ISOFORM_PAGE_SIZE, next) : null,
      items: isoforms.slice(offset, next).map(isoformSummary),
    });
    if (total === 0) break;
  }
  return pages;
}

export async function renderGenes(w: TreeWriter, genes: GeneRow[], byGene: Map<string, IsoformRow[]>, tick: () => void) {
  for (const gene of genes) {
    const id = TreeWriter.safeId(gene.gene_id);
    const isoforms = byGene.get(gene.gene_id) ?? [];
    await w.json(treePaths.gene(id), geneRecord(gene, isoforms));
    const pages = isoformPages(gene, isoforms);
    for (let n = 0; n < pages.length; n++) await w.json(treePaths.genePage(id, n), pages[n]);
    tick();
  }
}
