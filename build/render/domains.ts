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

/** Mean pLDDT over the residues of the segments that the structure covers, 2 decimals; null if none. */
export function domainPlddt(segments: [number, number][], residues: { start: number; values: number[] } | undefined): number | null {
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

export async function renderDomains(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const plddt = new Map(
    (db.prepare('SELECT transcript_id, plddt_residues FROM structures WHERE plddt_residues IS NOT NULL').all() as { transcript_id: string; plddt_residues: string }[]).map((r) => [
      r.transcript_id,
      JSON.parse(r.plddt_residues) as { start: number; values: number[] },
    ]),
  );
  const byIsoform = new Map<string, DomainBody[]>();
  const rows = db.prepare('SELECT * FROM domains ORDER BY transcript_id, start, end, source, accession, id').iterate() as Iterable<DomainRow>;
  for (const r of rows) {
    const list = byIsoform.get(r.transcript_id) ?? [];
    const segments = JSON.parse(r.segments) as [number, number][];
    list.push({
      source: r.source,
      accession: r.accession,
      name: r.name,
      start: r.start,
      end: r.end,
      segments,
      score: r.score,
      evalue: r.evalue,
      plddt: domainPlddt(segments, plddt.get(r.transcript_id)),
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
