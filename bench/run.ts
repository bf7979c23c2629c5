// `npm run bench`: runs the benchmark sections and writes BENCHMARKS.md.
// Progress goes to stderr, a one-line summary at the end. A missed target is printed as MISSED in the
// report and the summary but does not fail the run: exit 1 only when a benchmark itself failed.
import { Command, InvalidArgumentError } from 'commander';
import { spawn } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { benchBuild } from './build.js';
import { benchBundle } from './bundle.js';
import { benchCli } from './cli.js';
import { createContext, ROOT, type BenchContext, type BenchOptions } from './context.js';
import { stopGcObserver } from './gc.js';
import { benchHandler } from './handler.js';
import { gitCommit, machine } from './machine.js';
import { benchPublish } from './publish.js';
import { benchPacks } from './packs.js';
import { benchMirror } from './mirror.js';
import { benchPackClients } from './pack-clients.js';
import { benchScale } from './scale.js';
import { SECTION_ORDER, writeBenchmarks, type SectionId, type SectionReport } from './report.js';
import { benchServer } from './server.js';
import { benchFront } from './front.js';
import { benchCompression } from './compression.js';
import { benchSoak } from './soak.js';
import { killAllServers } from './servers.js';

type Section = (ctx: BenchContext) => Promise<SectionReport>;

/** Search latency at human scale lives in bench/search.ts (exporting `benchSearch`), when present. */
async function searchSection(): Promise<Section | null> {
  if (!existsSync(join(ROOT, 'bench/search.ts'))) return null;
  const mod = (await import('./search.js' as string)) as { benchSearch: Section };
  return mod.benchSearch;
}

const positive = (v: string) => {
  if (!/^[1-9]\d*$/.test(v)) throw new InvalidArgumentError('expected a positive integer');
  return Number(v);
};

function publishScale(v: string): 'demo' | 'human' | 'demo+human' {
  if (v !== 'demo' && v !== 'human' && v !== 'demo+human')
    throw new InvalidArgumentError('expected demo, human or demo+human');
  return v;
}

function sectionList(v: string): SectionId[] {
  const ids = v
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean);
  for (const id of ids)
    if (!(SECTION_ORDER as readonly string[]).includes(id))
      throw new InvalidArgumentError(`unknown section "${id}"; sections: ${SECTION_ORDER.join(', ')}`);
  return ids as SectionId[];
}

async function main(argv: string[]): Promise<number> {
  const cli = new Command('bench')
    .description(
      'Benchmarks of the build, the edge handler, the local server and its nginx front, publishing, the edge bundle and a soak run; writes BENCHMARKS.md.',
    )
    .option('--only <sections>', `comma-separated subset of: ${SECTION_ORDER.join(', ')}`, sectionList)
    .option('--runs <n>', 'runs per figure (the median is reported with the spread)', positive, 5)
    .option('--runs-human <n>', 'runs of the human-scale build (minutes each)', positive, 1)
    .option(
      '--publish-pairs <n>',
      'pairs of publish runs against s3rver, each run on new buckets, the order of publish and rclone alternating',
      positive,
      3,
    )
    .option(
      '--publish-scale <scale>',
      "release the publish section uploads: demo, human (the build section's human tree, or --human-tree), or demo+human (one pair on the human tree after the demo's)",
      publishScale,
      'demo',
    )
    .option('--quick', 'short durations and few requests: a smoke run, not figures to publish', false)
    .option('--soak-minutes <n>', 'length of the soak run', positive, 10)
    .option('--skip-human', 'do not build the human-scale release', false)
    .option(
      '--human-tree <dir>',
      'work directory of the human-scale build (kept afterwards; with --skip-human, an existing human tree there is used by sections that want one, e.g. search)',
    )
    .option(
      '--scale-genes <n>',
      'genes of the smaller release the scale section builds (the larger has four times as many)',
      positive,
      4000,
    )
    .option('--demo-work <dir>', 'use this already built demo release (release.sqlite, tree/) instead of building one')
    .option('--out <file>', 'report to write', join(ROOT, 'BENCHMARKS.md'))
    .option('--keep-tmp', 'keep the scratch directory', false);
  cli.parse(argv);
  const o = cli.opts<{
    only?: SectionId[];
    runs: number;
    runsHuman: number;
    publishPairs: number;
    publishScale: 'demo' | 'human' | 'demo+human';
    quick: boolean;
    soakMinutes: number;
    skipHuman: boolean;
    humanTree?: string;
    demoWork?: string;
    scaleGenes: number;
    out: string;
    keepTmp: boolean;
  }>();
  const opts: BenchOptions = {
    runs: o.runs,
    runsHuman: o.runsHuman,
    publishPairs: o.publishPairs,
    publishScale: o.publishScale,
    quick: o.quick,
    soakMinutes: o.soakMinutes,
    skipHuman: o.skipHuman,
    humanTree: o.humanTree,
    demoWork: o.demoWork,
    scaleGenes: o.scaleGenes,
  };

  const log = (line: string) => process.stderr.write(`${line}\n`);
  const tmp = mkdtempSync(join(tmpdir(), 'isoatlas-bench-'));
  const ctx = createContext(opts, tmp, log);
  const sections: Record<SectionId, Section | null> = {
    build: benchBuild,
    handler: benchHandler,
    search: await searchSection(),
    server: benchServer,
    front: benchFront,
    compression: benchCompression,
    publish: benchPublish,
    packs: benchPacks,
    mirror: benchMirror,
    'pack-clients': benchPackClients,
    bundle: benchBundle,
    cli: benchCli,
    soak: benchSoak,
    scale: benchScale,
  };
  const wanted = o.only ?? SECTION_ORDER.filter((id) => sections[id]);
  const reports: SectionReport[] = [];
  const host = machine();
  const commit = gitCommit(ROOT);
  const stampNow = () =>
    `Measured ${new Date().toISOString().slice(0, 16).replace('T', ' ')} UTC at commit ${commit} on ${host.cpu} (${host.cores} cores)${o.quick ? ' with --quick (smoke run: short durations, not figures to publish)' : ''}`;
  const failed: string[] = [];
  const started = performance.now();
  try {
    for (const id of wanted) {
      const section = sections[id];
      if (!section) {
        log(`bench: section ${id} is not available in this checkout`);
        failed.push(id);
        continue;
      }
      log(`bench: ${id}…`);
      const t = performance.now();
      const load = loadavg()[0];
      try {
        const report = await section(ctx);
        // Other work on the machine skews figures: say how busy it was when the section started.
        report.method = `${report.method} Machine load average when the section started: ${load.toFixed(2)}.`;
        reports.push(report);
        // Written section by section, so an interrupted run keeps what it measured.
        writeBenchmarks(o.out, host, stampNow(), [report]);
        log(`bench: ${id} done in ${((performance.now() - t) / 1000).toFixed(0)} s`);
      } catch (err) {
        failed.push(id);
        log(`bench: ${id} FAILED: ${(err as Error).stack ?? err}`);
      }
    }
  } finally {
    stopGcObserver();
    killAllServers();
    // Deleted by a detached rm: the scratch space holds s3rver's tens of thousands of files, which
    // take minutes to delete on a busy disk, and nothing in it is needed any more.
    if (!o.keepTmp) spawn('rm', ['-rf', tmp], { detached: true, stdio: 'ignore' }).unref();
    else log(`bench: scratch files kept in ${tmp}`);
  }

  const missed = reports.flatMap((r) => r.targets.filter((t) => t.met === false).map((t) => t.what));
  const minutes = ((performance.now() - started) / 60_000).toFixed(1);
  const parts = reports.map((r) => r.headline);
  log(
    `bench: ${reports.length} section(s) in ${minutes} min → ${o.out}; ${parts.join('; ')}` +
      `${missed.length ? `; MISSED ${missed.length} target(s): ${missed.join(', ')}` : '; every target met'}` +
      `${failed.length ? `; FAILED: ${failed.join(', ')}` : ''}`,
  );
  return failed.length ? 1 : 0;
}

// Exit explicitly: a stray socket or timer of a library (S3 client, autocannon) must not keep a
// finished bench run alive.
process.exit(await main(process.argv));
