// Domain lists: `/isoforms/{transcript_id}/domains` — Pfam and TED, ordered by position.
import { treePaths } from '../../edge/contract/tree.js';
import type { DomainBody, DomainListBody } from '../../edge/contract/schemas.js';
import type { Db } from '../release-db/database.js';
import type { IsoformRow } from './load.js';
import { TreeWriter } from './tree-writer.js';

type DomainRow = [
  source: 'pfam' | 'ted', accession: string, name: string | null, start: number, end: number, segments: string,
  score: number | null, scoreKind: 'bit_score' | 'uncertainty' | 'confidence' | null, evalue: number | null, provenance: 'real' | 'generated',
];

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

/** One isoform's domains at a time through the transcript index, as arrays rather than row objects:
 * memory stays flat whether the release has thousands of domains or millions. */
export async function renderDomains(db: Db, w: TreeWriter, isoforms: IsoformRow[], tick: () => void) {
  const domainsOf = db
    .prepare('SELECT source, accession, name, start, end, segments, score, score_kind, evalue, provenance FROM domains WHERE transcript_id = ? ORDER BY start, end, source, accession, id')
    .raw();
  const residuesOf = db.prepare('SELECT plddt_residues FROM structures WHERE transcript_id = ? AND plddt_residues IS NOT NULL').pluck();
  for (const iso of isoforms) {
    // A coding isoform without the track counts null, a non-coding one has nothing to annotate.
    const rows = iso.metrics.domains ? (domainsOf.all(iso.transcript_id) as DomainRow[]) : [];
    const residuesText = rows.length && iso.has_structure ? (residuesOf.get(iso.transcript_id) as string | undefined) : undefined;
    const residues = residuesText ? (JSON.parse(residuesText) as { start: number; values: number[] }) : undefined;
    const items: DomainBody[] = rows.map(([source, accession, name, start, end, segmentsText, score, kind, evalue, provenance]) => {
      const segments = JSON.parse(segmentsText) as [number, number][];
      // Each score in the field that says what it measures.
      const as = (k: typeof kind) => (kind === k ? score : null);
      return {
        source, accession, name, start, end, segments, score: as('bit_score'), uncertainty: as('uncertainty'), confidence: as('confidence'), evalue,
        plddt: domainPlddt(segments, residues), provenance,
      };
    });
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
