// Reads the core rows every renderer needs, a batch at a time so memory holds one batch, not the
// release: genes in gene id order, each with its isoforms (joined with their metrics), for the gene
// routes; isoforms in transcript id order, each with its gene, for the isoform routes. The isoform
// routes read their tracks by transcript id, in the order those tables are stored and indexed, so
// their pages are read once rather than once per gene that has rows on them.
import type { Db } from '../release-db/database.js';
import { Metrics, type MetricsBody } from '../../edge/contract/schemas.js';
import {
  compareNatural,
  type GeneInfo,
  type GeneRecord,
  type IsoformRecord,
  type OrfRecord,
  type ReferenceCds,
  type SqantiQc,
} from '../release-db/records.js';

/** A gene with what the gene-info import says about it, and whether the reference annotates a CDS
 * for any of its transcripts (GENCODE's word that it is protein-coding where the GTF has no types). */
export type GeneRow = GeneRecord & GeneInfo & { has_annotated_cds?: boolean };

/** An isoform as every renderer needs it: the stored columns less the bulky ones only the isoform
 * record shows (IsoformDetail, read one isoform at a time) and the NMD source, a name that is always
 * set by now, and what the renderer derives. */
export interface IsoformRow
  extends Omit<
    IsoformRecord,
    'transcript_name' | 'protein_sequence' | 'nmd' | 'nmd_source' | 'exons' | 'orf' | 'reference_cds' | 'qc'
  > {
  transcript_name: string;
  canonical: boolean;
  has_structure: boolean;
  metrics: MetricsBody;
}

const bool = (v: number | null) => (v === null ? null : v === 1);

/** The metrics, as the schema lists them: each a column of isoform_metrics, SQLite's 0/1 read as a
 * boolean where the schema says boolean. */
const METRICS = Object.entries(Metrics.properties).map(([name, schema]) => ({
  name,
  boolean: (schema as { anyOf?: { type?: string }[] }).anyOf?.some((s) => s.type === 'boolean') ?? false,
}));

const GENES = `SELECT g.gene_id, g.gene_id_versioned, g.symbol, g.biotype, g.source, g.chromosome, g.strand, g.start, g."end",
              g.canonical_transcript_id, g.canonical_rule, i.name, coalesce(i.synonyms, '[]') AS synonyms, i.gene_type,
              i.ncbi_gene_id, coalesce(g.hgnc_id, i.hgnc_id) AS hgnc_id, coalesce(i.uniprot_ids, '[]') AS uniprot_ids,
              EXISTS (SELECT 1 FROM isoforms x WHERE x.gene_id = g.gene_id AND x.reference_cds IS NOT NULL) AS has_annotated_cds
       FROM genes g LEFT JOIN gene_info i USING (gene_id)`;

type StoredGene = Omit<GeneRow, 'synonyms' | 'uniprot_ids' | 'has_annotated_cds'> & {
  synonyms: string;
  uniprot_ids: string;
  has_annotated_cds: number;
};

const geneRow = (g: StoredGene): GeneRow => ({
  ...g,
  synonyms: JSON.parse(g.synonyms),
  uniprot_ids: JSON.parse(g.uniprot_ids),
  has_annotated_cds: g.has_annotated_cds === 1,
});

export function loadGenes(db: Db): GeneRow[] {
  return (db.prepare(`${GENES} ORDER BY gene_id`).all() as StoredGene[]).map(geneRow);
}

const ISOFORMS = `SELECT i.transcript_id, i.transcript_id_unversioned, i.transcript_name, i.transcript_name_source, i.gene_id,
              i.source, i.transcript_type, i.structural_category, i.associated_transcript, i.associated_genes,
              i.chromosome, i.strand, i.start, i.end, i.length, i.exon_count, i.coding, i.protein_length,
              (g.canonical_transcript_id = i.transcript_id) AS canonical, i.expression_tpm, i.expression_source, i.tags,
              EXISTS (SELECT 1 FROM structures s WHERE s.transcript_id = i.transcript_id) AS has_structure,
              ${METRICS.map((m) => `m.${m.name}`).join(', ')}
       FROM isoforms i JOIN genes g USING (gene_id) JOIN isoform_metrics m USING (transcript_id)`;

const isoformRow = (r: Record<string, unknown>): IsoformRow => ({
  transcript_id: r.transcript_id as string,
  transcript_id_unversioned: r.transcript_id_unversioned as string | null,
  transcript_name: r.transcript_name as string,
  transcript_name_source: r.transcript_name_source as 'gtf' | 'generated',
  gene_id: r.gene_id as string,
  source: r.source as 'reference' | 'long_read',
  transcript_type: r.transcript_type as string | null,
  structural_category: r.structural_category as string | null,
  associated_transcript: r.associated_transcript as string | null,
  associated_genes: JSON.parse(r.associated_genes as string),
  chromosome: r.chromosome as string,
  strand: r.strand as '+' | '-',
  start: r.start as number,
  end: r.end as number,
  length: r.length as number,
  exon_count: r.exon_count as number,
  coding: bool(r.coding as number | null),
  protein_length: r.protein_length as number | null,
  canonical: r.canonical === 1,
  expression_tpm: r.expression_tpm as number | null,
  expression_source: r.expression_source as string | null,
  tags: JSON.parse(r.tags as string),
  has_structure: r.has_structure === 1,
  metrics: Object.fromEntries(
    METRICS.map((m) => [m.name, m.boolean ? bool(r[m.name] as number | null) : r[m.name]]),
  ) as MetricsBody,
});

/** A gene and its isoforms, in the order its record lists them. */
export interface GeneWithIsoforms {
  gene: GeneRow;
  isoforms: IsoformRow[];
}

/** Every gene in gene id order, `size` genes at a time, each with its isoforms. Each batch is read
 * whole before it is yielded, so the caller may run other statements on `db` between batches. */
export function* geneBatches(db: Db, size: number): Generator<GeneWithIsoforms[]> {
  const genesAfter = db.prepare(`${GENES} WHERE g.gene_id > ? ORDER BY g.gene_id LIMIT ?`);
  // In transcript id order, so isoforms that compare equal keep one order whatever the batch.
  const isoformsOf = db.prepare(`${ISOFORMS} WHERE i.gene_id BETWEEN ? AND ? ORDER BY i.transcript_id`);
  let after = '';
  for (;;) {
    const genes = (genesAfter.all(after, size) as StoredGene[]).map(geneRow);
    if (!genes.length) return;
    after = genes[genes.length - 1].gene_id;
    const byGene = groupByGene((isoformsOf.all(genes[0].gene_id, after) as Record<string, unknown>[]).map(isoformRow));
    yield genes.map((gene) => ({ gene, isoforms: byGene.get(gene.gene_id) ?? [] }));
  }
}

/** An isoform and its gene. */
export interface IsoformWithGene {
  isoform: IsoformRow;
  gene: GeneRow;
}

/** Every isoform of a gene of the release in transcript id order, `size` at a time, each with its
 * gene. Each batch is read whole before it is yielded, as in geneBatches. */
export function* isoformBatches(db: Db, size: number): Generator<IsoformWithGene[]> {
  const isoformsAfter = db.prepare(`${ISOFORMS} WHERE i.transcript_id > ? ORDER BY i.transcript_id LIMIT ?`);
  const geneById = db.prepare(`${GENES} WHERE g.gene_id = ?`);
  let after = '';
  for (;;) {
    const isoforms = (isoformsAfter.all(after, size) as Record<string, unknown>[]).map(isoformRow);
    if (!isoforms.length) return;
    after = isoforms[isoforms.length - 1].transcript_id;
    const genes = new Map<string, GeneRow>();
    const geneOf = (id: string) => {
      let gene = genes.get(id);
      if (!gene) genes.set(id, (gene = geneRow(geneById.get(id) as StoredGene)));
      return gene;
    };
    yield isoforms.map((isoform) => ({ isoform, gene: geneOf(isoform.gene_id) }));
  }
}

/** What only the isoform record shows. */
export interface IsoformDetail {
  protein_sequence: string | null;
  exons: [number, number][];
  orf: OrfRecord | null;
  reference_cds: ReferenceCds | null;
  qc: SqantiQc | null;
}

/** Reads one isoform's detail at a time, so the whole release's sequences never sit in memory. */
export function isoformDetails(db: Db): (transcriptId: string) => IsoformDetail {
  const stmt = db.prepare(
    `SELECT protein_sequence, exons, orf_start, orf_end, orf_transcript_start, orf_transcript_end, orf_completeness, orf_source, reference_cds, qc
     FROM isoforms WHERE transcript_id = ?`,
  );
  return (transcriptId) => {
    const r = stmt.get(transcriptId) as Record<string, unknown>;
    return {
      protein_sequence: r.protein_sequence as string | null,
      exons: JSON.parse(r.exons as string),
      orf:
        r.orf_completeness === null
          ? null
          : {
              start: r.orf_start as number,
              end: r.orf_end as number,
              transcript_start: r.orf_transcript_start as number,
              transcript_end: r.orf_transcript_end as number,
              completeness: r.orf_completeness as OrfRecord['completeness'],
              source: r.orf_source as OrfRecord['source'],
            },
      reference_cds: r.reference_cds === null ? null : JSON.parse(r.reference_cds as string),
      qc: r.qc === null ? null : JSON.parse(r.qc as string),
    };
  };
}

/** The order of a gene's isoforms in its record and pages: canonical first, then reference isoforms
 * by name, then long-read isoforms by id (natural order). */
export function compareIsoformsInGene(a: IsoformRow, b: IsoformRow): number {
  if (a.canonical !== b.canonical) return a.canonical ? -1 : 1;
  if (a.source !== b.source) return a.source === 'reference' ? -1 : 1;
  return a.source === 'reference'
    ? compareNatural(a.transcript_name, b.transcript_name)
    : compareNatural(a.transcript_id, b.transcript_id);
}

function groupByGene(isoforms: IsoformRow[]): Map<string, IsoformRow[]> {
  const byGene = new Map<string, IsoformRow[]>();
  for (const iso of isoforms) {
    const list = byGene.get(iso.gene_id);
    if (list) list.push(iso);
    else byGene.set(iso.gene_id, [iso]);
  }
  for (const list of byGene.values()) list.sort(compareIsoformsInGene);
  return byGene;
}
