// PTM site lists: `/isoforms/{transcript_id}/ptm` — every site, by position.
import { treePaths } from '../../edge/contract/tree.js';
import type { PtmSiteListBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/database.js';
import type { IsoformRow } from './load.js';
import { TreeWriter } from './tree-writer.js';

type PtmRow = [position: number, residue: string, modification: string, source: string, provenance: 'real' | 'generated'];

/** One isoform at a time through the transcript index, rows as arrays: memory stays flat. */
export async function renderPtm(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const sitesOf = db
    .prepare('SELECT position, residue, modification, source, provenance FROM ptm_sites WHERE transcript_id = ? ORDER BY position, modification, source, id')
    .raw();
  for (const iso of isoforms) {
    // The metric counts the same rows; null (no track, or no protein) and 0 need no lookup.
    const rows = iso.metrics.ptm ? (sitesOf.all(iso.transcript_id) as PtmRow[]) : [];
    const body: PtmSiteListBody = {
      transcript_id: iso.transcript_id,
      transcript_name: iso.transcript_name,
      protein_length: iso.protein_length,
      total: rows.length,
      items: rows.map(([position, residue, modification, source, provenance]) => ({ position, residue, modification, source, provenance })),
    };
    await w.json(treePaths.ptm(TreeWriter.safeId(iso.transcript_id)), body);
    tick();
  }
}
