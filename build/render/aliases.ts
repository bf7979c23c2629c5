// The alias maps the edge function resolves names with, sharded by key (contract/shards.ts). Keys
// are lower-cased, so any case works:
//   genes:    symbol, gene id, versioned gene id → gene id (a symbol shared by several genes maps to
//             the sorted list of their ids, which the edge answers with 409 and the choices);
//   isoforms: transcript id, unversioned ENST id, transcript name → transcript id.
// A gene id always wins over a symbol spelled the same; any other clash is a build error.
import { treePaths } from '../../edge/contract/tree.js';
import type { GeneRow, IsoformRow } from './core-rows.js';
import type { TreeWriter } from './tree-writer.js';
import { writeSharded } from './sharded-table.js';

export interface AliasMaps {
  genes: Map<string, string | string[]>;
  isoforms: Map<string, string>;
}

export function buildAliases(genes: GeneRow[], isoforms: IsoformRow[]): AliasMaps {
  const geneKeys = new Map<string, string | string[]>();
  const bySymbol = new Map<string, string[]>();
  for (const g of genes) {
    const key = g.symbol.toLowerCase();
    const ids = bySymbol.get(key);
    if (ids) ids.push(g.gene_id);
    else bySymbol.set(key, [g.gene_id]);
  }
  for (const [key, ids] of bySymbol) geneKeys.set(key, ids.length === 1 ? ids[0] : [...ids].sort());
  for (const g of genes) {
    for (const id of [g.gene_id, g.gene_id_versioned]) if (id) geneKeys.set(id.toLowerCase(), g.gene_id);
  }

  const isoformKeys = new Map<string, string>();
  const add = (key: string, transcriptId: string, what: string) => {
    const k = key.toLowerCase();
    const holder = isoformKeys.get(k);
    if (holder !== undefined && holder !== transcriptId) {
      throw new Error(
        `isoform alias "${key}" (${what} of ${transcriptId}) already names ${holder}; isoform ids and names must not collide`,
      );
    }
    isoformKeys.set(k, transcriptId);
  };
  for (const i of isoforms) {
    add(i.transcript_id, i.transcript_id, 'id');
    if (i.transcript_id_unversioned) add(i.transcript_id_unversioned, i.transcript_id, 'unversioned id');
    add(i.transcript_name, i.transcript_id, 'name');
  }
  return { genes: geneKeys, isoforms: isoformKeys };
}

/** Writes both alias tables; returns their shard counts for edge/index.json. */
export async function renderAliases(
  w: TreeWriter,
  genes: GeneRow[],
  isoforms: IsoformRow[],
): Promise<{ genes: number; isoforms: number }> {
  const aliases = buildAliases(genes, isoforms);
  return {
    genes: await writeSharded(w, aliases.genes, treePaths.geneAliases),
    isoforms: await writeSharded(w, aliases.isoforms, treePaths.isoformAliases),
  };
}
