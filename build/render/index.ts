// `isoatlas build`: release database → the complete v1 tree plus manifest.json. The tree is rendered
// into a staging directory and swapped in at the end, so a failed build never leaves a partial tree
// where a server or publisher might read it. Memory stays bounded as the release grows: genes are
// rendered a batch at a time, and what spans the whole release (manifest entries, alias and search
// keys, the structure map) goes to scratch tables beside the output, written out shard by shard.
import { existsSync, mkdirSync, renameSync, rmSync } from 'node:fs';
import { dirname, resolve } from 'node:path';
import { EDGE_INDEX_FORMAT, keyedFilePath, treePaths, type EdgeIndex } from '../../edge/contract/tree.js';
import { keyedFileRoutes, type KeyedFileRoute } from '../../edge/contract/routes.js';
import { openReleaseDb } from '../release-db/database.js';
import { startProgress } from '../common/progress.js';
import { geneBatches, isoformBatches, type GeneRow, type GeneWithIsoforms, type IsoformRow } from './core-rows.js';
import { renderSpecs, type RenderInput, type RenderSpec } from './resources.js';
import { renderStructures } from './structures.js';
import { renderSearchIndex } from './search-index.js';
import { gatherAliases, renderAliases } from './aliases.js';
import { renderRelease } from './release.js';
import { renderOpenApi } from './openapi-examples.js';
import { renderDocs } from './docs.js';
import { TreeWriter } from './tree-writer.js';
import { writeManifestFrom } from './manifest.js';
import { ManifestSpill } from './manifest-spill.js';
import { Scratch } from './scratch.js';
import type { Db } from '../release-db/database.js';
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

/** Rows per batch: enough that per-batch queries cost little, few enough that a batch (with its
 * files in flight) is a small fraction of the build's memory. */
const GENES_PER_BATCH = 256;
const ISOFORMS_PER_BATCH = 1024;

/** The renderer of one keyed file route: writes a row's file (a `pages` list, one per page), named by
 * the row's canonical id. */
function fileRenderer(w: TreeWriter, route: KeyedFileRoute, input: RenderInput) {
  const bodyOf = (renderSpecs[route.id] as RenderSpec<GeneRow | IsoformRow>).prepare(input);
  const pages = 'window' in route.file && route.file.window === 'pages';
  const idOf = (row: GeneRow | IsoformRow) =>
    route.file.per === 'gene' ? (row as GeneRow).gene_id : (row as IsoformRow).transcript_id;
  return async (row: GeneRow | IsoformRow) => {
    const id = TreeWriter.safeId(idOf(row));
    const body = bodyOf(row);
    if (pages) for (const [n, page] of (body as object[]).entries()) await w.json(keyedFilePath(route, id, n), page);
    else await w.json(keyedFilePath(route, id), body);
  };
}

/** Writes every keyed file route's files: the gene routes' a batch of genes (with their isoforms) at
 * a time, then the isoform routes' a batch of isoforms (with their genes) at a time. */
async function renderKeyedFiles(
  db: Db,
  w: TreeWriter,
  counts: { genes: number; isoforms: number },
  opts: { progress?: boolean; genesPerBatch?: number },
): Promise<void> {
  let genes = new Map<string, GeneWithIsoforms>();
  let genesOfIsoforms = new Map<string, GeneRow>();
  const input: RenderInput = {
    db,
    isoformsOf: (id) => genes.get(id)?.isoforms ?? [],
    geneOf: (id) => genesOfIsoforms.get(id)!,
  };
  const renderers = (per: 'gene' | 'isoform') =>
    keyedFileRoutes.filter((r) => r.file.per === per).map((route) => fileRenderer(w, route, input));
  const total = keyedFileRoutes.reduce((n, r) => n + (r.file.per === 'gene' ? counts.genes : counts.isoforms), 0);
  const bar = opts.progress === false ? { tick() {}, stop() {} } : startProgress('rendering', total);
  const geneRenderers = renderers('gene');
  for (const batch of geneBatches(db, opts.genesPerBatch ?? GENES_PER_BATCH)) {
    genes = new Map(batch.map((g) => [g.gene.gene_id, g]));
    for (const render of geneRenderers)
      for (const { gene } of batch) {
        await render(gene);
        bar.tick();
      }
  }
  const isoformRenderers = renderers('isoform');
  // A batch of isoforms per batch of genes asked for: a smaller batch of either gives the same tree.
  const isoformsPerBatch = opts.genesPerBatch ?? ISOFORMS_PER_BATCH;
  for (const batch of isoformBatches(db, isoformsPerBatch)) {
    genesOfIsoforms = new Map(batch.map((i) => [i.gene.gene_id, i.gene]));
    for (const render of isoformRenderers)
      for (const { isoform } of batch) {
        await render(isoform);
        bar.tick();
      }
  }
  bar.stop();
}

/** Renders the release at `dbPath` into `outDir`. A non-empty `outDir` must be a tree an earlier
 * build rendered, and is replaced only with `replace` (output-guard.ts). */
export async function renderTree(
  dbPath: string,
  outDir: string,
  opts: { progress?: boolean; replace?: boolean; genesPerBatch?: number } = {},
): Promise<BuildSummary> {
  const started = performance.now();
  const out = resolve(outDir);
  await checkBuildOutput(out, { force: opts.replace ?? false });
  const staging = `${out}.partial-${process.pid}`;
  rmSync(staging, { recursive: true, force: true });
  const db = openReleaseDb(dbPath);
  // The release is read in key order, a batch at a time; a page cache of this size holds the index
  // pages those reads revisit, and sorts beyond it spill to temporary files. No mmap: mapped pages of
  // a release file of several GB would count in the build's resident memory as they are touched.
  db.pragma('cache_size = -16384');
  db.pragma('mmap_size = 0');
  db.pragma('temp_store = FILE');
  let manifestScratch: Scratch | undefined;
  let tableScratch: Scratch | undefined;
  try {
    // Two scratch files beside the output: a table being read (an alias table, say) while the files
    // it renders are recorded must not be the connection that records them.
    mkdirSync(dirname(out), { recursive: true });
    manifestScratch = new Scratch(`${out}.manifest-${process.pid}.sqlite`);
    tableScratch = new Scratch(`${out}.tables-${process.pid}.sqlite`);
    const spill = new ManifestSpill(manifestScratch);
    const edgeFiles: [string, string][] = [];
    const w = new TreeWriter(staging, undefined, (e) => {
      spill.add(e);
      if (e.path.startsWith('edge/')) edgeFiles.push([e.path, e.sha256]);
    });
    const count = (sql: string) => db.prepare(sql).pluck().get() as number;
    const counts = {
      genes: count('SELECT count(*) FROM genes'),
      isoforms: count('SELECT count(*) FROM isoforms i JOIN genes g USING (gene_id)'),
    };

    const aliasShards = gatherAliases(db, tableScratch);
    const release = await renderRelease(db, w);
    await renderKeyedFiles(db, w, counts, opts);
    const structures = await renderStructures(db, w, tableScratch);
    const aliases = await renderAliases(w, tableScratch, aliasShards);
    const search = await renderSearchIndex(w, db, tableScratch);
    const edgeIndex: EdgeIndex = {
      format: EDGE_INDEX_FORMAT,
      gene_aliases: { shards: aliases.genes },
      isoform_aliases: { shards: aliases.isoforms },
      structures: { shards: structures.shards },
      search,
      sha256: Object.fromEntries(edgeFiles),
    };
    await w.json(treePaths.edgeIndex, edgeIndex);
    await renderOpenApi(w, release, db);
    await renderDocs(w);
    await w.flush();
    tableScratch.close();
    const manifest = await writeManifestFrom(staging, release.release, spill);
    manifestScratch.close();

    if (existsSync(out)) {
      const old = `${out}.old-${process.pid}`;
      renameSync(out, old);
      renameSync(staging, out);
      rmSync(old, { recursive: true, force: true });
    } else renameSync(staging, out);

    return {
      release: release.release,
      files: w.files + manifest.written,
      bytes: w.bytes,
      seconds: (performance.now() - started) / 1000,
      genes: counts.genes,
      isoforms: counts.isoforms,
      structures: structures.entries,
    };
  } catch (err) {
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    tableScratch?.close();
    manifestScratch?.close();
    db.close();
  }
}
