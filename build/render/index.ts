// `isoatlas build`: release database → the complete v1 tree plus manifest.json. The tree is rendered
// into a staging directory and swapped in at the end, so a failed build never leaves a partial tree
// where a server or publisher might read it.
import { existsSync, renameSync, rmSync } from 'node:fs';
import { resolve } from 'node:path';
import { EDGE_INDEX_FORMAT, keyedFilePath, treePaths, type EdgeIndex } from '../../edge/contract/tree.js';
import { keyedFileRoutes, type KeyedFileRoute } from '../../edge/contract/routes.js';
import { openReleaseDb } from '../release-db/database.js';
import { startProgress } from '../common/progress.js';
import { groupByGene, loadGenes, loadIsoforms, type GeneRow, type IsoformRow } from './core-rows.js';
import { renderSpecs, type RenderInput, type RenderSpec } from './resources.js';
import { renderStructures } from './structures.js';
import { renderSearchIndex } from './search-index.js';
import { renderAliases } from './aliases.js';
import { renderRelease } from './release.js';
import { renderOpenApi } from './openapi-examples.js';
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

/** Writes one keyed file route's files: one per row (a `pages` list, one per page), named by the row's
 * canonical id. */
async function renderFiles(
  w: TreeWriter,
  route: KeyedFileRoute,
  spec: RenderSpec<GeneRow | IsoformRow>,
  input: RenderInput,
  rows: (GeneRow | IsoformRow)[],
  tick: () => void,
) {
  const bodyOf = spec.prepare(input);
  const pages = 'window' in route.file && route.file.window === 'pages';
  const idOf = (row: GeneRow | IsoformRow) =>
    route.file.per === 'gene' ? (row as GeneRow).gene_id : (row as IsoformRow).transcript_id;
  for (const row of rows) {
    const id = TreeWriter.safeId(idOf(row));
    const body = bodyOf(row);
    if (pages) for (const [n, page] of (body as object[]).entries()) await w.json(keyedFilePath(route, id, n), page);
    else await w.json(keyedFilePath(route, id), body);
    tick();
  }
}

/** Renders the release at `dbPath` into `outDir`. A non-empty `outDir` must be a tree an earlier
 * build rendered, and is replaced only with `replace` (output-guard.ts). */
export async function renderTree(
  dbPath: string,
  outDir: string,
  opts: { progress?: boolean; replace?: boolean } = {},
): Promise<BuildSummary> {
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

    const input: RenderInput = { db, isoformsOf: (id) => byGene.get(id) ?? [], geneOf: (id) => geneById.get(id)! };
    const rowsOf = (route: KeyedFileRoute) => (route.file.per === 'gene' ? genes : isoforms);
    const total = keyedFileRoutes.reduce((n, route) => n + rowsOf(route).length, 0);
    const bar = opts.progress === false ? { tick() {}, stop() {} } : startProgress('rendering', total);
    const release = await renderRelease(db, w);
    for (const route of keyedFileRoutes) {
      await renderFiles(w, route, renderSpecs[route.id] as RenderSpec<GeneRow | IsoformRow>, input, rowsOf(route), () =>
        bar.tick(),
      );
    }
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
