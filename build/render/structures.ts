// Predicted structures: the mmCIF files themselves and the structure map (isoform → file) that the
// edge function reads to answer `/isoforms/{id}/structure` with a redirect.
import { createHash } from 'node:crypto';
import { treePaths, type StructureMapEntry } from '../../edge/contract/tree.js';
import type { Db } from '../release-db/store.js';
import { TreeWriter } from './tree-writer.js';

interface StructureRow {
  transcript_id: string;
  model_source: string;
  mean_plddt: number;
  mmcif: Buffer | null;
  mmcif_sha256: string | null;
  provenance: 'real' | 'generated';
}

export async function renderStructures(db: Db, w: TreeWriter): Promise<number> {
  const map: Record<string, StructureMapEntry> = {};
  const rows = db.prepare('SELECT * FROM structures ORDER BY transcript_id').iterate() as Iterable<StructureRow>;
  let files = 0;
  for (const r of rows) {
    const path = treePaths.structureFile(TreeWriter.safeId(r.transcript_id));
    if (r.mmcif) {
      const sha = createHash('sha256').update(r.mmcif).digest('hex');
      if (r.mmcif_sha256 && sha !== r.mmcif_sha256) throw new Error(`structure of ${r.transcript_id}: stored mmCIF does not match its recorded sha256`);
      await w.bytesAt(path, r.mmcif);
      files += 1;
    }
    map[r.transcript_id] = {
      path,
      sha256: r.mmcif_sha256,
      mean_plddt: r.mean_plddt,
      model_source: r.model_source,
      provenance: r.provenance,
    };
  }
  await w.json(treePaths.structureMap, map);
  return files;
}
