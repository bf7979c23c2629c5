// Domain lists: `/isoforms/{transcript_id}/domains` — Pfam and TED, ordered by position.
import { treePaths } from '../../edge/contract/tree.js';
import type { DomainBody, DomainListBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/store.js';
import type { IsoformRow } from './load.js';
import { TreeWriter } from './tree-writer.js';

interface DomainRow {
  transcript_id: string;
  source: 'pfam' | 'ted';
  accession: string;
  name: string | null;
  start: number;
  end: number;
  segments: string;
  score: number | null;
  evalue: number | null;
  provenance: 'real' | 'generated';
}

export async function renderDomains(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const byIsoform = new Map<string, DomainBody[]>();
  const rows = db.prepare('SELECT * FROM domains ORDER BY transcript_id, start, end, source, accession, id').iterate() as Iterable<DomainRow>;
  for (const r of rows) {
    const list = byIsoform.get(r.transcript_id) ?? [];
    list.push({
      source: r.source,
      accession: r.accession,
      name: r.name,
      start: r.start,
      end: r.end,
      segments: JSON.parse(r.segments),
      score: r.score,
      evalue: r.evalue,
      provenance: r.provenance,
    });
    byIsoform.set(r.transcript_id, list);
  }
  for (const iso of isoforms) {
    const items = byIsoform.get(iso.transcript_id) ?? [];
    const body: DomainListBody = {
      transcript_id: iso.transcript_id,
      transcript_name: iso.transcript_name,
      protein_length: iso.protein_length,
      total: items.length,
      items,
    };
    await w.json(treePaths.domains(TreeWriter.safeId(iso.transcript_id)), body);
    tick();
  }
}
