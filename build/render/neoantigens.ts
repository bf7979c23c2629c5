// Neoantigen lists: `/isoforms/{transcript_id}/neoantigens` — the top NEOANTIGEN_TOP, best first.
// Ranking: lowest predicted affinity (nM) first; peptides with no affinity come after, by percentile
// rank; ties by peptide, allele and position so the order is deterministic.
import { NEOANTIGEN_TOP, treePaths } from '../../edge/contract/tree.js';
import type { NeoantigenBody, NeoantigenListBody } from '../../edge/contract/schemas.js';
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

export async function renderNeoantigens(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const rows = db
    .prepare(
      `SELECT * FROM (
         SELECT transcript_id, peptide, allele, affinity_nm, percentile_rank, start, provenance,
                row_number() OVER (PARTITION BY transcript_id ORDER BY affinity_nm IS NULL, affinity_nm,
                                   percentile_rank IS NULL, percentile_rank, peptide, allele, start) AS rank,
                count(*) OVER (PARTITION BY transcript_id) AS total
         FROM neoantigens)
       WHERE rank <= ? ORDER BY transcript_id, rank`,
    )
    .iterate(NEOANTIGEN_TOP) as Iterable<NeoantigenRow>;
  const byIsoform = new Map<string, { total: number; items: NeoantigenBody[] }>();
  for (const r of rows) {
    const entry = byIsoform.get(r.transcript_id) ?? { total: r.total, items: [] };
    entry.items.push({
      rank: r.rank,
      peptide: r.peptide,
      length: r.peptide.length,
      allele: r.allele,
      affinity_nm: r.affinity_nm,
      percentile_rank: r.percentile_rank,
      start: r.start,
      end: r.start + r.peptide.length - 1,
      provenance: r.provenance,
    });
    byIsoform.set(r.transcript_id, entry);
  }
  for (const iso of isoforms) {
    const entry = byIsoform.get(iso.transcript_id) ?? { total: 0, items: [] };
    const body: NeoantigenListBody = {
      transcript_id: iso.transcript_id,
      transcript_name: iso.transcript_name,
      total: entry.total,
      limit: NEOANTIGEN_TOP,
      items: entry.items,
    };
    await w.json(treePaths.neoantigens(TreeWriter.safeId(iso.transcript_id)), body);
    tick();
  }
}
