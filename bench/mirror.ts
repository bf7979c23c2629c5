// Mirroring (#33): a first sync and a 1% re-sync of the demo release, as a mirror operator gets them
// through another mirror's `isoatlas serve` with its default limits (read through packs), beside the
// same syncs reading every object on its own (through the same kind of server, its limits raised so
// the run ends; the time at the default limit is computed from the request count) and beside
// `rclone copy` of the same store from the bucket.
//
// The store: the demo release published to s3rver (bin/local-s3.cjs), then a release with 1% of
// isoforms changed (bench/publish.ts changedRelease). A mirror synced from the bucket is what the
// servers serve; it is synced again after the second publish before the re-syncs are measured.
import { join } from 'node:path';
import { publish, s3Client } from '../build/publish/publish.js';
import { renderTree } from '../build/render/index.js';
import { mirror, type MirrorSummary } from '../edge/mirror/mirror.js';
import type { BenchContext } from './context.js';
import { RCLONE_DOCS, RCLONE_FLAGS, changedRelease, rclone, rcloneInstalled } from './publish.js';
import type { SectionReport, Target } from './report.js';
import { startS3rver } from './s3rver.js';
import { startLocalServer } from './servers.js';
import { fmt } from './stats.js';

const BUCKET = 'mirror-bench';
/** `isoatlas serve`'s default anonymous limit per address (edge/access), for the per-object projection. */
const DEFAULT_PER_MINUTE = 900;

interface Row {
  what: string;
  requests: number | null;
  bytes: number | null;
  seconds: number;
  refused: number | null;
}

const row = (what: string, s: MirrorSummary): Row => ({
  what,
  requests: s.requests,
  bytes: s.bytes,
  seconds: s.seconds,
  refused: s.waited,
});

export async function benchMirror(ctx: BenchContext): Promise<SectionReport> {
  const base = await ctx.demo();
  const changedDb = join(ctx.tmp, 'mirror-changed.sqlite');
  const change = changedRelease(base.db, changedDb);
  const tree2 = join(ctx.tmp, 'mirror-changed-tree');
  ctx.log(`  mirror: rendering release 2 (${change.changed} of ${fmt(change.isoforms)} isoforms changed)…`);
  await renderTree(changedDb, tree2, { progress: false });
  // s3rver takes any credentials, but the SDK wants some.
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const s3rver = await startS3rver(join(ctx.tmp, 's3rver-mirror'), [BUCKET], { conditionalWrites: true });
  const rcloneVersion = await rcloneInstalled();
  const rows: Row[] = [];
  try {
    const s3 = s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' });
    const fromBucket = { from: `s3://${BUCKET}`, endpoint: s3rver.endpoint, region: 'us-east-1', progress: false };
    const upstream = join(ctx.tmp, 'mirror-upstream');
    const dirs = { packs: join(ctx.tmp, 'mirror-packs'), objects: join(ctx.tmp, 'mirror-objects') };
    const rcloneDir = join(ctx.tmp, 'mirror-rclone');

    const round = async (label: string) => {
      const limited = await startLocalServer(upstream, ctx.tmp, { defaultLimits: true });
      const open = await startLocalServer(upstream, ctx.tmp);
      try {
        ctx.log(`  mirror: ${label}, through packs…`);
        rows.push(
          row(`${label}: packs, default limits`, await mirror({ from: limited.base, to: dirs.packs, progress: false })),
        );
        ctx.log(`  mirror: ${label}, object by object…`);
        rows.push(
          row(
            `${label}: object by object, limits raised`,
            await mirror({ from: open.base, to: dirs.objects, progress: false, packs: false }),
          ),
        );
      } finally {
        await limited.stop();
        await open.stop();
      }
      if (rcloneVersion) {
        ctx.log(`  mirror: ${label}, rclone copy…`);
        const r = await rclone('copy', `bench:${BUCKET}`, rcloneDir, s3rver.endpoint);
        if (r.failure) throw new Error(`rclone copy failed: ${r.failure}`);
        rows.push({
          what: `${label}: \`rclone copy\` of the bucket`,
          requests: null,
          bytes: null,
          seconds: r.seconds,
          refused: null,
        });
      }
    };

    await publish({ dir: base.tree, bucket: BUCKET, s3, progress: false });
    await mirror({ ...fromBucket, to: upstream });
    await round('first sync');
    await publish({ dir: tree2, bucket: BUCKET, s3, progress: false });
    await mirror({ ...fromBucket, to: upstream });
    await round('1% re-sync');
  } finally {
    await s3rver.stop();
  }

  const first = rows.find((r) => r.what.startsWith('first sync: packs'))!;
  const perObject = rows.find((r) => r.what.startsWith('first sync: object'))!;
  const atLimit = (r: Row) => (r.requests === null ? '–' : `${((r.requests / DEFAULT_PER_MINUTE) * 60).toFixed(0)} s`);
  const targets: Target[] = [
    {
      what: 'chained first sync of the demo through default limits: requests',
      target: '≤ 300',
      measured: fmt(first.requests!),
      met: first.requests! <= 300,
    },
    {
      what: 'chained first sync of the demo through default limits: seconds, no 429',
      target: '≤ 120 s, 0 refused',
      measured: `${first.seconds.toFixed(1)} s, ${first.refused} refused`,
      met: first.seconds <= 120 && first.refused === 0,
    },
  ];
  return {
    id: 'mirror',
    title: 'Mirroring: packs through a default-limited server, beside object by object and rclone',
    method:
      `The demo release (then release 2, ${change.changed} of ${fmt(change.isoforms)} isoforms changed) published to s3rver with conditional writes and mirrored from it; ` +
      "that mirror served by `isoatlas serve` twice: with its default limits (anonymous, per address) and with them raised. A new mirror syncs from the first server through packs, another from the second object by object (`packs: false`), each run once; `rclone copy` copies the bucket into a directory. Figures are each tool's own wall time on loopback; requests and refusals are the mirror's own counts.",
    tables: [
      {
        headers: [
          'sync',
          'requests',
          'MB',
          'seconds',
          'refused (429)',
          `at ${DEFAULT_PER_MINUTE}/min, requests alone would take`,
        ],
        rows: rows.map((r) => [
          r.what,
          r.requests === null ? '–' : fmt(r.requests),
          r.bytes === null ? '–' : (r.bytes / 1e6).toFixed(1),
          r.seconds.toFixed(1),
          r.refused === null ? '–' : fmt(r.refused),
          atLimit(r),
        ]),
      },
    ],
    targets,
    notes: [
      `Object by object, the first sync sends ${fmt(perObject.requests!)} requests: at the default limit of ${DEFAULT_PER_MINUTE} a minute that is ${atLimit(perObject)} of waiting alone, which is why its server's limits are raised here.`,
      rcloneVersion
        ? `rclone (${rcloneVersion}) runs with \`${RCLONE_FLAGS.join(' ')}\` and 16 transfers, reading the bucket with its S3 credentials (${RCLONE_DOCS.fastList}); it has no way through \`isoatlas serve\`, which lists nothing.`
        : 'rclone is not installed: its rows are left out.',
      'Human scale is not measured here yet (the issue asks for it: first sync ≤ 15 min through a rate-limited endpoint, 1% re-sync ≤ 60 s).',
    ],
    headline: `first sync ${fmt(first.requests!)} requests in ${first.seconds.toFixed(0)} s (object by object ${fmt(perObject.requests!)})`,
  };
}
