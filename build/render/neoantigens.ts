// Neoantigen lists: `/isoforms/{transcript_id}/neoantigens` — the top NEOANTIGEN_TOP, best first.
// Ranking: lowest predicted affinity (nM) first; peptides with no affinity come after, by percentile
// rank; ties by peptide, allele and position so the order is deterministic.
import { NEOANTIGEN_TOP, treePaths } from '../../edge/contract/tree.js';
import type { NeoantigenListBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/database.js';
import type { IsoformRow } from './load.js';
import { TreeWriter } from './tree-writer.js';

type NeoantigenRow = [peptide: string, allele: string, affinity_nm: number | null, percentile_rank: number | null, start: number, provenance: 'real' | 'generated'];

/** One isoform at a time through the transcript index, so millions of neoantigens are never in
 * memory at once. Rows come as arrays (no per-row objects), only the top NEOANTIGEN_TOP are read,
 * and the total is the isoform's neoantigen metric, which counts the same rows. */
export async function renderNeoantigens(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const topOf = db
    .prepare(
      `SELECT peptide, allele, affinity_nm, percentile_rank, start, provenance FROM neoantigens WHERE transcript_id = ?
       ORDER BY affinity_nm IS NULL, affinity_nm, percentile_rank IS NULL, percentile_rank, peptide, allele, start LIMIT ?`,
    )
    .raw();
  const proteinOf = db.prepare('SELECT protein_sequence FROM isoforms WHERE transcript_id = ?').pluck();
  for (const iso of isoforms) {
    // The metric is null without the track or a protein, and 0 for none: skip the empty lookups.
    const total = iso.metrics.neoantigens ?? 0;
    const rows = total ? (topOf.all(iso.transcript_id, NEOANTIGEN_TOP) as NeoantigenRow[]) : [];
    const protein = rows.length ? ((proteinOf.get(iso.transcript_id) as string | null) ?? '') : '';
    const body: NeoantigenListBody = {
      transcript_id: iso.transcript_id,
      transcript_name: iso.transcript_name,
      total,
      limit: NEOANTIGEN_TOP,
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
    await w.json(treePaths.neoantigens(TreeWriter.safeId(iso.transcript_id)), body);
    tick();
  }
}
