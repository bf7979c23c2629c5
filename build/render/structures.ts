// Predicted structures: the mmCIF files themselves (when the release holds them; a human-scale
// release may hold paths only, served from a structure base URL) and the structure map (isoform →
// file, sharded) that the edge function reads to answer `/isoforms/{id}/structure` with a redirect.
import { createHash } from 'node:crypto';
import { treePaths, type StructureMapEntry } from '../../edge/contract/tree.js';
import type { Db } from '../release-db/database.js';
import type { Scratch } from './scratch.js';
import { TreeWriter } from './tree-writer.js';
import { ShardedSpill } from './sharded-table.js';

interface StructureRow {
  transcript_id: string;
  model_source: string;
  mean_plddt: number;
  mmcif: Buffer | null;
  mmcif_sha256: string | null;
  provenance: 'real' | 'generated';
}

export async function renderStructures(
  db: Db,
  w: TreeWriter,
  scratch: Scratch,
): Promise<{ files: number; entries: number; shards: number }> {
  const map = new ShardedSpill<StructureMapEntry>(scratch, 'structure_map');
  const rows = db.prepare('SELECT * FROM structures ORDER BY transcript_id').iterate() as Iterable<StructureRow>;
  let files = 0;
  for (const r of rows) {
    const path = treePaths.structureFile(TreeWriter.safeId(r.transcript_id));
    if (r.mmcif) {
      const sha = createHash('sha256').update(r.mmcif).digest('hex');
      if (r.mmcif_sha256 && sha !== r.mmcif_sha256)
        throw new Error(`structure of ${r.transcript_id}: stored mmCIF does not match its recorded sha256`);
      await w.bytesAt(path, r.mmcif);
      files += 1;
    }
    map.add(r.transcript_id, {
      path,
      sha256: r.mmcif_sha256,
      mean_plddt: r.mean_plddt,
      model_source: r.model_source,
      provenance: r.provenance,
    });
  }
  return { files, entries: map.keys, shards: await map.write(w, treePaths.structureMap) };
}
