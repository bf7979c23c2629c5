// The render spec of every route the contract declares as one file per gene or isoform
// (edge/contract/routes.ts, `file.per`): the body of one gene's or isoform's file (a `pages` list: its
// pages). The renderer (index.ts) writes each at the route's tree path, in the table's order, and
// counts its progress from the table; its type asks for a spec for exactly those routes, so a route
// declared without one does not compile.
import { listSize, routes, type KeyedFileRoute } from '../../edge/contract/routes.js';
import { linkTo } from '../../edge/contract/tree.js';
import type { DomainBody, DomainListBody, NeoantigenListBody, PtmSiteListBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/database.js';
import { isoformDetails, type GeneRow, type IsoformRow } from './core-rows.js';
import { geneRecord, isoformPages } from './gene-record.js';
import { isoformRecord } from './isoform-record.js';

/** What a spec may read: the release database, and the core rows loaded once. */
export interface RenderInput {
  db: Db;
  isoformsOf(geneId: string): IsoformRow[];
  geneOf(geneId: string): GeneRow;
}

export interface RenderSpec<Row> {
  /** Prepares what it reads once (statements, lookups), and returns the body of one row's file, or
   * the bodies of its pages for a `pages` list. */
  prepare(input: RenderInput): (row: Row) => object;
  /** The count of the track's records in the release metadata (`counts`): its name and the table. */
  counted?: { name: string; table: string };
}

type RowOf<R> = R extends { file: { per: 'gene' } } ? GeneRow : IsoformRow;
export type RenderSpecs = { readonly [R in KeyedFileRoute as R['id']]: RenderSpec<RowOf<R>> };

const route = (id: KeyedFileRoute['id']) => routes.find((r) => r.id === id)!;

type DomainRow = [
  source: 'pfam' | 'ted',
  accession: string,
  name: string | null,
  start: number,
  end: number,
  segments: string,
  score: number | null,
  scoreKind: 'bit_score' | 'uncertainty' | 'confidence' | null,
  evalue: number | null,
  provenance: 'real' | 'generated',
];
type NeoantigenRow = [
  peptide: string,
  allele: string,
  affinity_nm: number | null,
  percentile_rank: number | null,
  start: number,
  provenance: 'real' | 'generated',
];
type PtmRow = [
  position: number,
  residue: string,
  modification: string,
  source: string,
  provenance: 'real' | 'generated',
];

/** Mean pLDDT over the residues of the segments that the structure covers, 2 decimals; null if none. */
export function domainPlddt(
  segments: [number, number][],
  residues: { start: number; values: number[] } | undefined,
): number | null {
  if (!residues) return null;
  let sum = 0;
  let n = 0;
  for (const [s, e] of segments) {
    for (let pos = s; pos <= e; pos++) {
      const v = residues.values[pos - residues.start];
      if (v !== undefined) {
        sum += v;
        n += 1;
      }
    }
  }
  return n ? Math.round((sum / n) * 100) / 100 : null;
}

// Lists are read one isoform at a time through the transcript index, rows as arrays rather than row
// objects: memory stays flat whether the release has thousands of records or millions. An isoform
// whose metric is null (no track, or no protein) or 0 needs no lookup: the metric counts the same rows.
export const renderSpecs: RenderSpecs = {
  gene: {
    prepare:
      ({ isoformsOf }) =>
      (gene) =>
        geneRecord(gene, isoformsOf(gene.gene_id)),
  },
  geneIsoforms: {
    prepare({ isoformsOf }) {
      const size = listSize(route('geneIsoforms'));
      return (gene) =>
        isoformPages(gene, isoformsOf(gene.gene_id), size, (id, query) => linkTo(route('geneIsoforms'), id, query));
    },
  },
  isoform: {
    prepare({ db, geneOf }) {
      const detailOf = isoformDetails(db);
      return (iso) => isoformRecord(iso, geneOf(iso.gene_id), detailOf(iso.transcript_id));
    },
  },

  /** Pfam and TED, by position, each with the mean pLDDT of its residues. */
  domains: {
    counted: { name: 'domains', table: 'domains' },
    prepare({ db }) {
      const domainsOf = db
        .prepare(
          'SELECT source, accession, name, start, end, segments, score, score_kind, evalue, provenance FROM domains WHERE transcript_id = ? ORDER BY start, end, source, accession, id',
        )
        .raw();
      const residuesOf = db
        .prepare('SELECT plddt_residues FROM structures WHERE transcript_id = ? AND plddt_residues IS NOT NULL')
        .pluck();
      return (iso): DomainListBody => {
        const rows = iso.metrics.domains ? (domainsOf.all(iso.transcript_id) as DomainRow[]) : [];
        const residuesText =
          rows.length && iso.has_structure ? (residuesOf.get(iso.transcript_id) as string | undefined) : undefined;
        const residues = residuesText ? (JSON.parse(residuesText) as { start: number; values: number[] }) : undefined;
        const items: DomainBody[] = rows.map(
          ([source, accession, name, start, end, segmentsText, score, kind, evalue, provenance]) => {
            const segments = JSON.parse(segmentsText) as [number, number][];
            // Each score in the field that says what it measures.
            const as = (k: typeof kind) => (kind === k ? score : null);
            return {
              source,
              accession,
              name,
              start,
              end,
              segments,
              score: as('bit_score'),
              uncertainty: as('uncertainty'),
              confidence: as('confidence'),
              evalue,
              plddt: domainPlddt(segments, residues),
              provenance,
            };
          },
        );
        return {
          transcript_id: iso.transcript_id,
          transcript_name: iso.transcript_name,
          protein_length: iso.protein_length,
          total: items.length,
          items,
        };
      };
    },
  },

  /** The best predicted neoantigens, as many as the route's largest limit: lowest predicted affinity
   * (nM) first, peptides with none after by percentile rank, ties by peptide, allele and position so
   * the order is deterministic. Only those are read; the total is the metric. */
  neoantigens: {
    counted: { name: 'neoantigens', table: 'neoantigens' },
    prepare({ db }) {
      const top = listSize(route('neoantigens'));
      const topOf = db
        .prepare(
          `SELECT peptide, allele, affinity_nm, percentile_rank, start, provenance FROM neoantigens WHERE transcript_id = ?
           ORDER BY affinity_nm IS NULL, affinity_nm, percentile_rank IS NULL, percentile_rank, peptide, allele, start LIMIT ?`,
        )
        .raw();
      const proteinOf = db.prepare('SELECT protein_sequence FROM isoforms WHERE transcript_id = ?').pluck();
      return (iso): NeoantigenListBody => {
        const total = iso.metrics.neoantigens ?? 0;
        const rows = total ? (topOf.all(iso.transcript_id, top) as NeoantigenRow[]) : [];
        const protein = rows.length ? ((proteinOf.get(iso.transcript_id) as string | null) ?? '') : '';
        return {
          transcript_id: iso.transcript_id,
          transcript_name: iso.transcript_name,
          total,
          limit: top,
          items: rows.map(([peptide, allele, affinity_nm, percentile_rank, start, provenance], i) => {
            const wt = protein.substr(start - 1, peptide.length);
            const whole = wt.length === peptide.length;
            return {
              rank: i + 1,
              peptide,
              length: peptide.length,
              allele,
              affinity_nm,
              percentile_rank,
              start,
              end: start + peptide.length - 1,
              wt_peptide: whole ? wt : null,
              mutated_positions: whole ? [...peptide].flatMap((aa, k) => (aa === wt[k] ? [] : [k + 1])) : [],
              provenance,
            };
          }),
        };
      };
    },
  },

  /** Every PTM site, by position. */
  ptm: {
    counted: { name: 'ptm_sites', table: 'ptm_sites' },
    prepare({ db }) {
      const sitesOf = db
        .prepare(
          'SELECT position, residue, modification, source, provenance FROM ptm_sites WHERE transcript_id = ? ORDER BY position, modification, source, id',
        )
        .raw();
      return (iso): PtmSiteListBody => {
        const rows = iso.metrics.ptm ? (sitesOf.all(iso.transcript_id) as PtmRow[]) : [];
        return {
          transcript_id: iso.transcript_id,
          transcript_name: iso.transcript_name,
          protein_length: iso.protein_length,
          total: rows.length,
          items: rows.map(([position, residue, modification, source, provenance]) => ({
            position,
            residue,
            modification,
            source,
            provenance,
          })),
        };
      };
    },
  },
};
