// `isoatlas build`: release database → the complete v1 tree plus manifest.json. The tree is rendered
// into a staging directory and swapped in at the end, so a failed build never leaves a partial tree
// where a server or publisher might read it.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { EDGE_INDEX_FORMAT, treePaths, type EdgeIndex } from '../../edge/contract/tree.js';
import { openReleaseDb } from '../release-db/database.js';
import { startProgress } from '../common/progress.js';
import { groupByGene, isoformDetails, loadGenes, loadIsoforms } from './load.js';
import { renderGenes } from './genes.js';
import { renderIsoforms } from './isoforms.js';
import { renderDomains } from './domains.js';
import { renderNeoantigens } from './neoantigens.js';
import { renderPtm } from './ptm.js';
import { renderStructures } from './structures.js';
import { renderSearchIndex } from './search-index.js';
import { renderAliases } from './aliases.js';
import { renderRelease } from './release.js';
import { renderOpenApi } from './openapi.js';
import { renderDocs } from './docs.js';
import { TreeWriter } from './tree-writer.js';
import { writeManifest } from './manifest.js';
import { checkBuildOutput } from './output-guard.js';

export interface BuildSummary {
  release: string;
  files: number;
  bytes: number;
  seconds: number;
  genes: number;
  isoforms: number;
  structures: number;
}

/** Renders the release at `dbPath` into `outDir`. A non-empty `outDir` must be a tree an earlier
 * build rendered, and is replaced only with `replace` (output-guard.ts). */
export async function renderTree(dbPath: string, outDir: string, opts: { progress?: boolean; replace?: boolean } = {}): Promise<BuildSummary> {
  const started = performance.now();
  const out = resolve(outDir);
  await checkBuildOutput(out, { force: opts.replace ?? false });
  const staging = `${out}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const db = openReleaseDb(dbPath);
  try {
    const w = new TreeWriter(staging);
    const genes = loadGenes(db);
    const isoforms = loadIsoforms(db);
    const byGene = groupByGene(isoforms);
    const geneById = new Map(genes.map((g) => [g.gene_id, g]));

    const bar = opts.progress === false ? { tick() {}, stop() {} } : startProgress('rendering', genes.length + isoforms.length * 4);
    const release = await renderRelease(db, w);
    await renderGenes(w, genes, byGene, () => bar.tick());
    await renderIsoforms(w, isoforms, geneById, isoformDetails(db), () => bar.tick());
    await renderDomains(db, w, isoforms, () => bar.tick());
    await renderNeoantigens(db, w, isoforms, () => bar.tick());
    await renderPtm(db, w, isoforms, () => bar.tick());
    bar.stop();
    const structures = await renderStructures(db, w);
    const aliases = await renderAliases(w, genes, isoforms);
    const search = await renderSearchIndex(w, genes, isoforms);
    const edgeIndex: EdgeIndex = {
      format: EDGE_INDEX_FORMAT,
      gene_aliases: { shards: aliases.genes },
      isoform_aliases: { shards: aliases.isoforms },
      structures: { shards: structures.shards },
      search,
      sha256: Object.fromEntries(w.entries.filter((e) => e.path.startsWith('edge/')).map((e) => [e.path, e.sha256])),
    };
    await w.json(treePaths.edgeIndex, edgeIndex);
    await renderOpenApi(w, release, { genes, isoforms });
    await renderDocs(w);
    await w.flush();
    const manifest = await writeManifest(staging, release.release, w.entries);

    if (existsSync(out)) {
      const old = `${out}.old-${process.pid}`;
      renameSync(out, old);
      renameSync(staging, out);
      rmSync(old, { recursive: true, force: true });
    } else renameSync(staging, out);

    return {
      release: release.release,
      files: w.entries.length + manifest.written,
      bytes: w.bytes,
      seconds: (performance.now() - started) / 1000,
      genes: genes.length,
      isoforms: isoforms.length,
      structures: structures.entries,
    };
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    db.close();
  }
}
