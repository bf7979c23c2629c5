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
import { checkBuildOutput, removeInterruptedBuilds, scratchName, stagingName } from './output-guard.js';

export interface BuildSummary {
  release: string;
  files: number;
  bytes: number;
  seconds: number;
  genes: number;
  isoforms: number;
  structures: number;
  /** Process ids of killed builds of the same output whose leftovers this build removed. */
  interrupted: number[];
}

/** Rows per batch: enough that per-batch queries cost little, few enough that a batch (with its
 * files in flight) is a small fraction of the build's memory. */
const GENES_PER_BATCH = 256;
const ISOFORMS_PER_BATCH = 1024;
/** Page cache (KiB) of the release while the keyed files are rendered. */
const RELEASE_CACHE_KIB = 4096;
/** Page cache (KiB) of a database read or written only in order: enough for the pages in use. */
const APPEND_CACHE_KIB = 1024;

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
  const interrupted = removeInterruptedBuilds(out);
  const staging = stagingName(out, process.pid);
  rmSync(staging, { recursive: true, force: true });
  const db = openReleaseDb(dbPath);
  // The release is read in key order, a batch at a time, so a small page cache holds the pages
  // those reads revisit (a larger one spares few reads: BENCHMARKS.md), and sorts beyond it spill to
  // temporary files. No mmap: mapped pages of a release file of several GB would count in the
  // build's resident memory as they are touched.
  db.pragma(`cache_size = -${RELEASE_CACHE_KIB}`);
  db.pragma('mmap_size = 0');
  db.pragma('temp_store = FILE');
  // The read lock taken once and held: each of the render's statements (several per isoform) would
  // otherwise lock and unlock the file and check it for a journal and a change. An import never
  // writes this file (it replaces it by a rename), so holding the lock keeps no one waiting.
  db.pragma('locking_mode = EXCLUSIVE');
  let manifestScratch: Scratch | undefined;
  let tableScratch: Scratch | undefined;
  let w: TreeWriter | undefined;
  try {
    // Two scratch files beside the output: a table being read (an alias table, say) while the files
    // it renders are recorded must not be the connection that records them.
    mkdirSync(dirname(out), { recursive: true });
    // The manifest's rows are only appended until the end, so its cache is small till then.
    manifestScratch = new Scratch(scratchName(out, 'manifest', process.pid), APPEND_CACHE_KIB);
    tableScratch = new Scratch(scratchName(out, 'tables', process.pid));
    const spill = new ManifestSpill(manifestScratch);
    const edgeFiles: [string, string][] = [];
    w = new TreeWriter(staging, {
      record(e) {
        spill.add(e);
        if (e.path.startsWith('edge/')) edgeFiles.push([e.path, e.sha256]);
      },
    });
    const count = (sql: string) => db.prepare(sql).pluck().get() as number;
    const counts = {
      genes: count('SELECT count(*) FROM genes'),
      isoforms: count('SELECT count(*) FROM isoforms i JOIN genes g USING (gene_id)'),
    };

    const aliasShards = gatherAliases(db, tableScratch);
    const release = await renderRelease(db, w);
    await renderKeyedFiles(db, w, counts, opts);
    // What is read after the keyed files is read once, in key order: the cache that served the
    // batches' revisits goes back, and the scratch tables' sorts have that memory instead.
    db.pragma(`cache_size = -${APPEND_CACHE_KIB}`);
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
    await w.close();
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
      interrupted,
    };
  } catch (err) {
    // The writer stops first: a batch it still held must not land after the staging tree is gone.
    await w?.close();
    rmSync(staging, { recursive: true, force: true });
    throw err;
  } finally {
    tableScratch?.close();
    manifestScratch?.close();
    db.close();
  }
}
