// `isoatlas build`: release database → the complete v1 tree plus manifest.json. The tree is rendered
// into a staging directory and swapped in at the end, so a failed build never leaves a partial tree
// where a server or publisher might read it.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join, resolve } from 'node:path';
import { treePaths } from '../../edge/contract/tree.js';
import { openReleaseDb } from '../release-db/store.js';
import { startProgress } from '../progress.js';
import { groupByGene, loadGenes, loadIsoforms } from './load.js';
import { renderGenes } from './genes.js';
import { renderIsoforms } from './isoforms.js';
import { renderDomains } from './domains.js';
import { renderNeoantigens } from './neoantigens.js';
import { renderStructures } from './structures.js';
import { renderSearchIndex } from './search-index.js';
import { renderAliases } from './aliases.js';
import { renderRelease } from './release.js';
import { TreeWriter } from './tree-writer.js';

export interface BuildSummary {
  release: string;
  files: number;
  bytes: number;
  seconds: number;
  genes: number;
  isoforms: number;
  structures: number;
}

export async function renderTree(dbPath: string, outDir: string, opts: { progress?: boolean } = {}): Promise<BuildSummary> {
  const started = performance.now();
  const out = resolve(outDir);
  const staging = `${out}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const db = openReleaseDb(dbPath);
  try {
    const w = new TreeWriter(staging);
    const genes = loadGenes(db);
    const isoforms = loadIsoforms(db);
    const byGene = groupByGene(isoforms);
    const geneById = new Map(genes.map((g) => [g.gene_id, g]));

    const bar = opts.progress === false ? { tick() {}, stop() {} } : startProgress('rendering', genes.length + isoforms.length * 3);
    const release = await renderRelease(db, w);
    await renderGenes(w, genes, byGene, () => bar.tick());
    await renderIsoforms(w, isoforms, geneById, () => bar.tick());
    await renderDomains(db, w, isoforms, () => bar.tick());
    await renderNeoantigens(db, w, isoforms, () => bar.tick());
    bar.stop();
    const structures = await renderStructures(db, w);
    await renderAliases(w, genes, isoforms);
    await renderSearchIndex(w, genes, isoforms);
    await w.flush();

    const entries = [...w.entries].sort((a, b) => (a.path < b.path ? -1 : 1));
    const manifest = { release: release.release, api_version: 'v1', files: entries.length, bytes: w.bytes, entries };
    await writeFile(join(staging, treePaths.manifest), JSON.stringify(manifest));

    if (existsSync(out)) {
      const old = `${out}.old-${process.pid}`;
      renameSync(out, old);
      renameSync(staging, out);
      rmSync(old, { recursive: true, force: true });
    } else renameSync(staging, out);

    return {
      release: release.release,
      files: entries.length + 1,
      bytes: w.bytes,
      seconds: (performance.now() - started) / 1000,
      genes: genes.length,
      isoforms: isoforms.length,
      structures,
    };
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    db.close();
  }
}
