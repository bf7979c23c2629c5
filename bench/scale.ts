// Scale (#34): each stage of the pipeline at two release sizes four times apart, its wall time and
// peak RSS, to show whether memory stays flat as the release grows. generate, import and build come
// from `isoatlas demo --scale human --genes N --json` (each stage in its own process, reporting its own
// figures); publish (to s3rver), mirror (from that bucket), gc and nginx-config (over the mirror) are
// run as the CLI, each in a child process whose peak RSS a preload reports (context.ts measureCli).
import { mkdirSync, rmSync } from 'node:fs';
import { loadavg } from 'node:os';
import { join } from 'node:path';
import { CLI, measureCli, run } from './context.js';
import type { SectionReport, Target } from './report.js';
import { startS3rver } from './s3rver.js';
import { fmt } from './stats.js';
import type { BenchContext } from './context.js';

/** The growth of a stage's peak RSS the issue allows for a release four times larger. */
const MAX_RSS_GROWTH = 1.25;

interface StageRun {
  stage: string;
  seconds: number;
  peakMiB: number;
}

interface SizeRun {
  genes: number;
  files: number;
  load: number;
  stages: StageRun[];
}

const mib = (bytes: number) => bytes / 1024 / 1024;

async function oneSize(ctx: BenchContext, genes: number): Promise<SizeRun> {
  const work = join(ctx.tmp, `scale-${genes}`);
  mkdirSync(work, { recursive: true });
  const load = loadavg()[0];
  ctx.log(`  scale: ${fmt(genes)} genes: generate, import, build…`);
  const out = await run(process.execPath, [
    CLI,
    'demo',
    '--scale',
    'human',
    '--genes',
    String(genes),
    '--json',
    '--work',
    work,
  ]);
  const line = out.stdout
    .trim()
    .split('\n')
    .reverse()
    .find((l) => l.startsWith('{'));
  if (!line) throw new Error(`isoatlas demo --scale human printed no JSON figures:\n${out.stdout.slice(-1000)}`);
  const report = JSON.parse(line) as {
    tree: string;
    stages: { stage: string; seconds: number; peak_rss_kib: number; files?: number }[];
  };
  const stages: StageRun[] = report.stages.map((s) => ({
    stage: s.stage,
    seconds: s.seconds,
    peakMiB: s.peak_rss_kib / 1024,
  }));
  const files = Number(report.stages.find((s) => s.stage === 'build')?.files ?? 0);

  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const bucket = 'scale';
  const s3rver = await startS3rver(join(work, 's3rver'), [bucket], { conditionalWrites: true });
  const mirrorDir = join(work, 'mirror');
  const measured = async (stage: string, args: string[]) => {
    ctx.log(`  scale: ${fmt(genes)} genes: ${stage}…`);
    const r = await measureCli(args, work, `${stage}-${genes}`);
    stages.push({ stage, seconds: r.seconds, peakMiB: mib(r.peakRssBytes) });
  };
  try {
    const s3 = ['--endpoint', s3rver.endpoint, '--log-level', 'warn'];
    await measured('publish', ['publish', '--dir', report.tree, '--bucket', bucket, ...s3]);
    await measured('mirror', ['mirror', '--from', `s3://${bucket}`, '--to', mirrorDir, ...s3]);
    await measured('gc', ['gc', '--bucket', bucket, '--dry-run', ...s3]);
  } finally {
    await s3rver.stop();
  }
  await measured('nginx-config', [
    'nginx-config',
    '--dir',
    mirrorDir,
    '--upstream',
    '127.0.0.1:9',
    '--listen',
    '127.0.0.1:9',
    '--out',
    join(work, 'front.conf'),
    '--compressed-dir',
    join(work, 'compressed'),
  ]);
  rmSync(work, { recursive: true, force: true });
  return { genes, files, load, stages };
}

export async function benchScale(ctx: BenchContext): Promise<SectionReport> {
  const small = ctx.opts.scaleGenes;
  const runs = [await oneSize(ctx, small), await oneSize(ctx, small * 4)];
  const [a, b] = runs;
  const rows = a.stages.map((s) => {
    const t = b.stages.find((x) => x.stage === s.stage)!;
    return {
      stage: s.stage,
      small: s,
      large: t,
      growth: t.peakMiB / s.peakMiB,
      slower: t.seconds / s.seconds,
    };
  });
  const targets: Target[] = rows.map((r) => ({
    what: `${r.stage}: peak RSS growth for a release 4× larger`,
    target: `≤ ${MAX_RSS_GROWTH}×`,
    measured: `${r.growth.toFixed(2)}× (${r.small.peakMiB.toFixed(0)} → ${r.large.peakMiB.toFixed(0)} MiB)`,
    met: r.growth <= MAX_RSS_GROWTH,
  }));
  const worst = rows.reduce((w, r) => (r.growth > w.growth ? r : w));
  return {
    id: 'scale',
    title: 'Scale: each stage at two release sizes four times apart',
    method:
      `Synthetic human-like releases of ${fmt(a.genes)} and ${fmt(b.genes)} genes (\`isoatlas demo --scale human --genes N --json\`: generate, import and build each in its own process, reporting their own seconds and peak RSS), ` +
      'then `isoatlas publish` to s3rver (conditional writes), `isoatlas mirror` from that bucket, `isoatlas gc --dry-run` on it and `isoatlas nginx-config` over the mirror, each a child process whose peak RSS (getrusage maxRSS) a preload reports at exit. One run per size.',
    tables: [
      {
        caption: `Files in the tree: ${fmt(a.files)} and ${fmt(b.files)}; load average when each size started: ${a.load.toFixed(2)} and ${b.load.toFixed(2)}.`,
        headers: [
          'stage',
          `seconds (${fmt(a.genes)} genes)`,
          `seconds (${fmt(b.genes)})`,
          'time ×',
          `peak RSS MiB (${fmt(a.genes)})`,
          `peak RSS MiB (${fmt(b.genes)})`,
          'RSS ×',
        ],
        rows: rows.map((r) => [
          r.stage,
          r.small.seconds.toFixed(1),
          r.large.seconds.toFixed(1),
          `${r.slower.toFixed(2)}×`,
          r.small.peakMiB.toFixed(0),
          r.large.peakMiB.toFixed(0),
          `${r.growth.toFixed(2)}×`,
        ]),
      },
    ],
    targets,
    notes: [
      `The sizes are chosen with \`--scale-genes <n>\` (the smaller; the larger is four times it). A stage's peak RSS includes Node's own baseline, so a flat stage shows a growth near 1×.`,
    ],
    headline: `peak RSS growth for 4× at most ${worst.growth.toFixed(2)}× (${worst.stage})`,
  };
}
