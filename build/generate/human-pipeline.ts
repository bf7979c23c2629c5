// `isoatlas demo --scale human`: generate the synthetic human-scale inputs, import them, build the
// tree — each stage in its own process, so each stage's peak RSS is its own (a process's maxRSS only
// ever grows) — and report seconds, files, bytes and peak RSS per stage, for people and for scripts.
import { spawn } from 'node:child_process';
import { mkdirSync, rmSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import { GENE_INFO_FILE, HUMAN_GENERATOR, generateHumanInputs } from './human.js';
import { importGeneInfo } from '../import/gene-info.js';
import { importCore, loadCoreConfig } from '../import/core.js';
import { importTrack } from '../import/tracks.js';
import { TRACKS } from '../release-db/schema.js';
import { updateReleaseDb } from '../release-db/database.js';
import { renderTree } from '../render/index.js';
import { startProgress } from '../common/progress.js';

import { HUMAN_STAGES, type HumanStage } from './human-stages.js';
export { HUMAN_STAGES, type HumanStage };

export interface HumanRunOptions {
  work: string;
  seed: number;
  /** Genes to generate (default: the human 62,000); smaller for quick runs. */
  genes?: number;
  progress?: boolean;
}

/** What one stage reports: its own wall time and the peak RSS of its process (KiB), plus counts. */
export interface StageFigures {
  stage: HumanStage;
  seconds: number;
  peak_rss_kib: number;
  [count: string]: number | string;
}

export const humanPaths = (work: string) => ({
  inputs: join(work, 'inputs'),
  db: join(work, 'release.sqlite'),
  tree: join(work, 'tree'),
});

const peakRssKib = () => process.resourceUsage().maxRSS; // kilobytes on Linux and macOS

/** Runs one stage in this process. */
export async function runHumanStage(stage: HumanStage, opts: HumanRunOptions): Promise<StageFigures> {
  const started = performance.now();
  const paths = humanPaths(opts.work);
  mkdirSync(opts.work, { recursive: true });
  let counts: Record<string, number | string> = {};
  if (stage === 'generate') {
    let bar: ReturnType<typeof startProgress> | null = null;
    const s = generateHumanInputs(paths.inputs, {
      seed: opts.seed,
      genes: opts.genes,
      onGene: (_done, total) => {
        if (opts.progress === false) return;
        bar ??= startProgress('generating', total);
        bar.tick();
      },
    });
    (bar as ReturnType<typeof startProgress> | null)?.stop();
    counts = {
      release: s.release,
      genes: s.genes,
      novel_genes: s.novelGenes,
      isoforms: s.referenceIsoforms + s.longReadIsoforms,
      long_read_isoforms: s.longReadIsoforms,
      coding_isoforms: s.codingIsoforms,
      multi_page_genes: s.multiPageGenes,
      domains: s.domains,
      neoantigens: s.neoantigens,
      ptm: s.ptm,
      structures: s.structures,
      files: s.files,
      bytes: s.bytes,
    };
  } else if (stage === 'import') {
    const config = loadCoreConfig(join(paths.inputs, 'release.config.json'));
    const core = await importCore(config, paths.db);
    counts = { genes: core.genes, isoforms: core.referenceIsoforms + core.longReadIsoforms };
    const coreSeconds = (performance.now() - started) / 1000;
    await updateReleaseDb(paths.db, async (db) => {
      for (const track of TRACKS) {
        counts[track] = await importTrack(db, {
          track,
          file: join(paths.inputs, 'tracks', `${track}.tsv`),
          source: 'isoatlas human-scale generator',
          version: `seed ${opts.seed}`,
          description: 'Synthetic records of realistic shape (isoatlas generate --scale human); not real predictions.',
          generated: true,
        });
      }
      const names = await importGeneInfo(db, {
        file: join(paths.inputs, GENE_INFO_FILE),
        source: HUMAN_GENERATOR,
        version: `seed ${opts.seed}`,
        description: "Synthetic full names: real chr22 genes' names with their numbers drawn anew; not real data.",
        generated: true,
      });
      counts.gene_info = names.genes;
    });
    counts.core_seconds = round(coreSeconds);
  } else {
    const s = await renderTree(paths.db, paths.tree, { progress: opts.progress, replace: true });
    counts = { release: s.release, genes: s.genes, isoforms: s.isoforms, files: s.files, bytes: s.bytes };
  }
  return { stage, seconds: round((performance.now() - started) / 1000), peak_rss_kib: peakRssKib(), ...counts };
}

const round = (seconds: number) => Math.round(seconds * 100) / 100;

/** Heap cap of each stage process (MiB). */
export const STAGE_HEAP_MB = 1536;

const BIN = join(PROJECT_ROOT, 'bin/isoatlas.mjs');

/** Runs one stage as `isoatlas demo-stage <stage>` in a child process and reads its figures (the last
 * stdout line, JSON); progress and logs go to this process's stderr. */
function runStageProcess(stage: HumanStage, opts: HumanRunOptions): Promise<StageFigures> {
  const args = [BIN, 'demo-stage', stage, '--work', opts.work, '--seed', String(opts.seed)];
  if (opts.genes !== undefined) args.push('--genes', String(opts.genes));
  return new Promise((resolvePromise, reject) => {
    // V8 grows its heap lazily towards a quarter of RAM; a cap makes it collect the garbage of each
    // rendering step instead of holding it, which keeps the build's RSS under 2 GB at human scale.
    const child = spawn(process.execPath, [`--max-old-space-size=${STAGE_HEAP_MB}`, ...args], {
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.setEncoding('utf8').on('data', (chunk: string) => (out += chunk));
    child.on('error', reject);
    child.on('close', (code) => {
      const last = out.trim().split('\n').pop() ?? '';
      if (code !== 0) return reject(new Error(`the ${stage} stage failed (exit code ${code})`));
      try {
        resolvePromise(JSON.parse(last) as StageFigures);
      } catch {
        reject(new Error(`the ${stage} stage printed no figures`));
      }
    });
  });
}

export interface HumanRunReport {
  release: string;
  seed: number;
  work: string;
  tree: string;
  stages: StageFigures[];
  files: number;
  bytes: number;
  seconds: number;
  peak_rss_kib: number;
}

/** The whole pipeline, one process per stage. `log` gets one line per stage. */
export async function runHumanPipeline(opts: HumanRunOptions, log: (line: string) => void): Promise<HumanRunReport> {
  const work = resolve(opts.work);
  rmSync(humanPaths(work).tree, { recursive: true, force: true });
  const stages: StageFigures[] = [];
  for (const stage of HUMAN_STAGES) {
    const figures = await runStageProcess(stage, { ...opts, work });
    stages.push(figures);
    log(stageLine(figures));
  }
  const build = stages[2]!;
  return {
    release: String(build.release),
    seed: opts.seed,
    work,
    tree: humanPaths(work).tree,
    stages,
    files: Number(build.files),
    bytes: Number(build.bytes),
    seconds: round(stages.reduce((sum, s) => sum + s.seconds, 0)),
    peak_rss_kib: Math.max(...stages.map((s) => s.peak_rss_kib)),
  };
}

const mib = (kib: number) => `${(kib / 1024).toFixed(0)} MiB`;
const n = (v: number | string | undefined) => Number(v ?? 0).toLocaleString('en-US');

export function stageLine(s: StageFigures): string {
  const what =
    s.stage === 'generate'
      ? `${n(s.genes)} genes, ${n(s.isoforms)} isoforms (${n(s.long_read_isoforms)} long-read), ${n(s.domains)} domains, ${n(s.neoantigens)} neoantigens, ${n(s.ptm)} PTM sites, ${n(s.structures)} structures; ${n(s.files)} files, ${(Number(s.bytes) / 1e6).toFixed(0)} MB`
      : s.stage === 'import'
        ? `${n(s.genes)} genes, ${n(s.isoforms)} isoforms (core ${s.core_seconds} s), ${n(s.domains)} domains, ${n(s.neoantigens)} neoantigens, ${n(s.ptm)} PTM sites, ${n(s.structures)} structures`
        : `${n(s.files)} files, ${(Number(s.bytes) / 1e6).toFixed(0)} MB`;
  return `${s.stage}: ${s.seconds.toFixed(1)} s, peak RSS ${mib(s.peak_rss_kib)}: ${what}`;
}

export function summaryLine(r: HumanRunReport): string {
  const [g, i, b] = r.stages;
  return `built synthetic human-scale release ${r.release}: ${n(r.files)} files, ${(r.bytes / 1e6).toFixed(0)} MB in ${r.seconds.toFixed(1)} s (generate ${g!.seconds.toFixed(1)} s, import ${i!.seconds.toFixed(1)} s, build ${b!.seconds.toFixed(1)} s); peak RSS ${mib(r.peak_rss_kib)} (build ${mib(b!.peak_rss_kib)}) → ${r.tree}`;
}
