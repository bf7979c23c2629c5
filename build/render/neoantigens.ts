// Neoantigen lists: `/isoforms/{transcript_id}/neoantigens` — the top NEOANTIGEN_TOP, best first.
// Ranking: lowest predicted affinity (nM) first; peptides with no affinity come after, by percentile
// rank; ties by peptide, allele and position so the order is deterministic.
import { NEOANTIGEN_TOP, treePaths } from '../../edge/contract/tree.js';
import type { NeoantigenListBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/store.js';
import type { IsoformRow } from './load.js';
import { TreeWriter } from './tree-writer.js';

interface NeoantigenRow {
  transcript_id: string;
  peptide: string;
  allele: string;
  affinity_nm: number | null;
  percentile_rank: number | null;
  start: number;
  provenance: 'real' | 'generated';
  rank: number;
  total: number;
}

/** One isoform at a time through the transcript index, so 5 M neoantigens are never in memory at
 * once; `count(*) OVER ()` is computed before LIMIT, so it is the isoform's full total. */
export async function renderNeoantigens(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const topOf = db.prepare(
    `SELECT transcript_id, peptide, allele, affinity_nm, percentile_rank, start, provenance,
            row_number() OVER (ORDER BY affinity_nm IS NULL, affinity_nm, percentile_rank IS NULL, percentile_rank, peptide, allele, start) AS rank,
            count(*) OVER () AS total
     FROM neoantigens WHERE transcript_id = ?
     ORDER BY rank LIMIT ?`,
  );
  for (const iso of isoforms) {
    // The metric counts the isoform's rows (null without the track or a protein): skip empty lookups.
    const rows = iso.metrics.neoantigens ? (topOf.all(iso.transcript_id, NEOANTIGEN_TOP) as NeoantigenRow[]) : [];
    const body: NeoantigenListBody = {
      transcript_id: iso.transcript_id,
      transcript_name: iso.transcript_name,
      total: rows[0]?.total ?? 0,
      limit: NEOANTIGEN_TOP,
      items: rows.map((r) => ({
        rank: r.rank,
        peptide: r.peptide,
        length: r.peptide.length,
        allele: r.allele,
        affinity_nm: r.affinity_nm,
        percentile_rank: r.percentile_rank,
        start: r.start,
        end: r.start + r.peptide.length - 1,
        provenance: r.provenance,
      })),
    };
    await w.json(treePaths.neoantigens(TreeWriter.safeId(iso.transcript_id)), body);
    tick();
  }
}
