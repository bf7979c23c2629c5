// The body of a gene record and the pages of a gene's isoform list: each page holds `size` isoform
// summaries (the list route's largest limit) and links to the next; the edge cuts any other window
// from these pages.
import { links, linksBelow } from '../../edge/contract/tree.js';
import { routes } from '../../edge/contract/routes.js';
import type { GeneBody, IsoformPageBody, XrefBody } from '../../edge/contract/schemas.js';
import type { GeneRow, IsoformRow } from './core-rows.js';
import { isoformSummary } from './isoform-record.js';

/** Links to the gene's records elsewhere, from its ids. AlphaFold DB files models by UniProt accession. */
export function geneXrefs(gene: GeneRow): XrefBody[] {
  const out: XrefBody[] = [];
  if (/^ENSG\d+$/.test(gene.gene_id))
    out.push({
      database: 'Ensembl',
      id: gene.gene_id,
      url: `https://www.ensembl.org/Homo_sapiens/Gene/Summary?g=${gene.gene_id}`,
    });
  if (gene.ncbi_gene_id)
    out.push({
      database: 'NCBI Gene',
      id: gene.ncbi_gene_id,
      url: `https://www.ncbi.nlm.nih.gov/gene/${gene.ncbi_gene_id}`,
    });
  if (gene.hgnc_id)
    out.push({
      database: 'HGNC',
      id: gene.hgnc_id,
      url: `https://www.genenames.org/data/gene-symbol-report/#!/hgnc_id/${gene.hgnc_id}`,
    });
  for (const acc of gene.uniprot_ids)
    out.push({ database: 'UniProt', id: acc, url: `https://www.uniprot.org/uniprotkb/${acc}/entry` });
  for (const acc of gene.uniprot_ids)
    out.push({ database: 'AlphaFold DB', id: acc, url: `https://alphafold.ebi.ac.uk/entry/${acc}` });
  return out;
}

const GENE_ROUTE = routes.find((r) => r.id === 'gene')!;

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
        ? {
            transcript_id: canonical.transcript_id,
            transcript_name: canonical.transcript_name,
            rule: gene.canonical_rule,
          }
        : null,
    isoform_count: isoforms.length,
    isoforms: isoforms.map(isoformSummary),
    links: { self: links.gene(gene.gene_id), ...linksBelow(GENE_ROUTE, gene.gene_id) } as GeneBody['links'],
  };
}

export function isoformPages(
  gene: GeneRow,
  isoforms: IsoformRow[],
  size: number,
  link: (geneId: string, query: { limit: number; offset: number }) => string,
): IsoformPageBody[] {
  const pages: IsoformPageBody[] = [];
  const total = isoforms.length;
  for (let offset = 0; offset < total || (total === 0 && offset === 0); offset += size) {
    const next = offset + size;
    pages.push({
      gene_id: gene.gene_id,
      symbol: gene.symbol,
      total,
      limit: size,
      offset,
      next: next < total ? link(gene.gene_id, { limit: size, offset: next }) : null,
      items: isoforms.slice(offset, next).map(isoformSummary),
    });
    if (total === 0) break;
  }
  return pages;
}
