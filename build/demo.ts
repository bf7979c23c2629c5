// The demo release: the real chr22 core, real pVACseq neoantigens where they fit, seeded generated
// tracks for the rest, rendered into a tree (`isoatlas demo`, `npm start`, the tests' global setup).
import { mkdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { importCore, loadCoreConfig } from './import/core.js';
import { importTrack, insertTrack } from './import/tracks.js';
import { importGeneInfo } from './import/gene-info.js';
import { describeWildTypeCheck, pvacseqOnRelease, readPvacseqAllEpitopes } from './import/native/neoantigens.js';
import { TRACKS, type Track } from './release-db/schema.js';
import { openReleaseDb, updateReleaseDb } from './release-db/database.js';
import { renderTree, type BuildSummary } from './render/index.js';
import { generateDemoTracks } from './generate/demo-tracks.js';
import { DEMO } from './paths.js';
import { log } from '../edge/server/logger.js';

export function logWarnings(warnings: string[]) {
  for (const w of warnings.slice(0, 5)) log.warn(w);
  if (warnings.length > 5) log.warn(`… and ${warnings.length - 5} more`);
}

const GENERATED_TRACK_FILES: Record<Track, string> = {
  domains: 'domains.tsv',
  neoantigens: 'neoantigens.tsv',
  ptm: 'ptm.tsv',
  structures: 'structures.tsv',
};

/** The whole demo pipeline: real chr22 core → seeded generated tracks → release DB → tree. */
export async function buildDemo(
  work = DEMO.work,
  opts: {
    progress?: boolean;
    seed?: number;
    /** Another release config over the same kinds of input (the test suite's fixture release, a
     * subset of the demo's genes); default the demo's own. */
    config?: string;
    /** How many isoforms get a generated structure (default the generator's). */
    structureSample?: number;
  } = {},
): Promise<{ db: string; tree: string; summary: BuildSummary }> {
  const seed = opts.seed ?? DEMO.seed;
  mkdirSync(work, { recursive: true });
  const db = join(work, 'release.sqlite');
  const tracksDir = join(work, 'generated-tracks');
  const tree = join(work, 'tree');
  const core = await importCore(loadCoreConfig(opts.config ?? DEMO.config), db);
  logWarnings(core.warnings);
  log.info(
    `imported core: ${core.genes} genes (${core.novelGenes} novel loci), ${core.referenceIsoforms} reference + ${core.longReadIsoforms} long-read isoforms`,
  );

  rmSync(tracksDir, { recursive: true, force: true });
  const reader = openReleaseDb(db);
  const generated = (() => {
    try {
      return generateDemoTracks(reader, tracksDir, { seed, structureSample: opts.structureSample });
    } finally {
      reader.close();
    }
  })();
  log.info(
    `generated tracks (seed ${seed}): ${generated.domains} domains, ${generated.neoantigens} neoantigens, ${generated.ptm} PTM sites, ${generated.structures} structures`,
  );

  await updateReleaseDb(db, async (handle) => {
    // Real annotations where a sample fits the demo's isoforms: pVACseq neoantigens on chr22.
    const pvacseq = await readPvacseqAllEpitopes(DEMO.realNeoantigens);
    const real = pvacseqOnRelease(handle, pvacseq.rows);
    const n = await insertTrack(
      handle,
      {
        track: 'neoantigens',
        file: DEMO.realNeoantigens,
        source: 'pVACseq (pVACtools test data)',
        version: 'pVACtools 0c05768b',
        description:
          'Class I epitopes of chr22 variants (HLA-E*01:01, HLA-G*01:09; NetMHC, PickPocket), mapped by transcript id and placed by their wild-type epitope on the release protein',
        generated: false,
      },
      real.located,
    );
    const info = await importGeneInfo(handle, {
      file: DEMO.geneInfo,
      source: 'org.Hs.eg.db (Bioconductor)',
      version: '3.16.0 (NCBI Gene 2022-09-12, UniProt 2022-09-23)',
      description:
        "Names, aliases, NCBI gene types and UniProt accessions of the demo's genes, by Ensembl id, else by symbol; records that contradict the annotation (another chromosome, linked to another gene, another gene's symbol) left out (data/gene-info/extract.sh)",
    });
    log.info(
      `imported gene info for ${info.genes} genes (${info.ambiguous.length} named by several records left without; ${info.refused.length} records refused for contradicting the annotation)`,
    );
    log.info(
      `imported ${n} real pVACseq neoantigens (${real.unmapped} on transcripts not in the release; ${describeWildTypeCheck(real.check)})`,
    );
    for (const track of TRACKS) {
      await importTrack(handle, {
        track,
        file: join(tracksDir, GENERATED_TRACK_FILES[track]),
        source: 'isoatlas demo generator',
        version: `seed ${seed}`,
        description: 'Generated values tied to the real protein sequences; not predictions of any real tool.',
        generated: true,
      });
    }
  });
  // The demo's own working directory: its tree is the demo's to replace.
  const summary = await renderTree(db, tree, { progress: opts.progress, replace: true });
  return { db, tree, summary };
}
