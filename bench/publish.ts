// Section 4: publishing and mirroring against s3rver (a real S3-protocol server), beside the tool a
// curator would pick instead, `rclone sync` of the same rendered tree to the same server. The
// human-scale release when this run has one (else the demo): a first publish, a release with 1% of
// isoforms changed, a mirror's first sync and its re-sync after the change.
import Database from 'better-sqlite3';
import { copyFileSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { publish, s3Client, type PublishSummary } from '../build/publish.js';
import { mirror, type MirrorSummary } from '../build/mirror.js';
import { renderTree } from '../build/render/index.js';
import { startS3rver } from './s3rver.js';
import { run, type BenchContext } from './context.js';
import type { SectionReport, Target } from './report.js';
import { fmt, mib } from './stats.js';

const BUCKET = 'isoatlas-bench';
const RCLONE_BUCKET = 'rclone-bench';
/** Requests in flight, the same for both tools. */
const PARALLEL = 16;

/** A copy of the release database with a new release name and 1% of isoforms' expression changed. */
function changedRelease(baseDb: string, file: string): { release: string; isoforms: number; changed: number } {
  copyFileSync(baseDb, file);
  const db = new Database(file);
  try {
    const release = `${(db.prepare("SELECT value FROM release_meta WHERE key = 'release'").get() as { value: string }).value}-bench`;
    db.prepare("UPDATE release_meta SET value = ? WHERE key = 'release'").run(release);
    const isoforms = (db.prepare('SELECT count(*) AS n FROM isoforms').get() as { n: number }).n;
    // Every 100th isoform (by rowid): a spread-out 1%, as a re-quantified sample would touch.
    const changed = db.prepare('UPDATE isoforms SET expression_tpm = coalesce(expression_tpm, 0) + 1 WHERE rowid % 100 = 0').run().changes;
    return { release, isoforms, changed };
  } finally {
    db.close();
  }
}

/** Whether Debian's rclone is installed; the comparison is left out (and said so) without it. */
async function hasRclone(): Promise<boolean> {
  return run('rclone', ['version']).then(
    () => true,
    () => false,
  );
}

/** `rclone sync <tree> bench:<bucket>`, timed. rclone from Debian refuses to start while
 * AWS_CA_BUNDLE is set, so it runs without it; the remote is configured through the environment. */
async function rcloneSync(tree: string, endpoint: string): Promise<{ seconds: number; failure: string | null }> {
  const env: NodeJS.ProcessEnv = {
    RCLONE_CONFIG_BENCH_TYPE: 's3',
    RCLONE_CONFIG_BENCH_PROVIDER: 'Other',
    RCLONE_CONFIG_BENCH_ENDPOINT: endpoint,
    RCLONE_CONFIG_BENCH_ACCESS_KEY_ID: 'S3RVER',
    RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY: 'S3RVER',
    RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE: 'true',
  };
  const started = performance.now();
  // One attempt (`--retries 1`): by default rclone repeats a sync that had errors up to 3 times, and
  // against s3rver its in-place rewrites make errors likely. One attempt is the least a user waits,
  // so the comparison can only flatter rclone; a failure is reported, not fatal.
  const failure = await run('env', ['-u', 'AWS_CA_BUNDLE', 'rclone', 'sync', tree, `bench:${RCLONE_BUCKET}`, '--transfers', String(PARALLEL), '--checkers', String(PARALLEL), '--retries', '1'], { env }).then(
    () => null,
    (err: Error) => err.message.split('\n').filter((l) => /ERROR/.test(l)).slice(-1)[0] ?? err.message.split('\n')[0],
  );
  return { seconds: (performance.now() - started) / 1000, failure };
}

export async function benchPublish(ctx: BenchContext): Promise<SectionReport> {
  const human = ctx.opts.quick ? null : ctx.human();
  const base = human ? { db: join(human.work, 'release.sqlite'), tree: human.tree, scale: 'human' } : { ...(await ctx.demo()), scale: 'demo' };
  const rclone = await hasRclone();
  const s3rver = await startS3rver(join(ctx.tmp, 's3rver'), [BUCKET, RCLONE_BUCKET]);
  const s3 = s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' });
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const mirrorDir = join(ctx.tmp, 'bench-mirror');
  let first: PublishSummary, second: PublishSummary, mirrored: MirrorSummary, resynced: MirrorSummary;
  let rcloneFirst: number | null = null;
  let rcloneSecond: number | null = null;
  const rcloneFailures: string[] = [];
  const timeRclone = async (tree: string, which: string) => {
    const r = await rcloneSync(tree, s3rver.endpoint);
    if (r.failure) rcloneFailures.push(`${which}: ${r.failure}`);
    ctx.log(`  rclone sync of ${which}: ${r.seconds.toFixed(1)} s${r.failure ? ` (failed: ${r.failure})` : ''}`);
    return r.seconds;
  };
  let change: ReturnType<typeof changedRelease>;
  const files = (tree: string) => countFiles(tree);
  try {
    ctx.log(`  ${base.scale} scale: publishing release 1 in full…`);
    first = await publish({ dir: base.tree, bucket: BUCKET, s3, progress: false, concurrency: PARALLEL });
    ctx.log(`  release 1: ${fmt(first.uploaded)} objects, ${mib(first.bytesUploaded).toFixed(1)} MiB in ${first.seconds.toFixed(1)} s`);
    if (rclone) {
      rcloneFirst = await timeRclone(base.tree, 'release 1');
    }
    mirrored = await mirror({ from: `s3://${BUCKET}`, to: mirrorDir, endpoint: s3rver.endpoint, progress: false, concurrency: PARALLEL });
    ctx.log(`  mirror, first sync: ${fmt(mirrored.fetched)} objects in ${mirrored.seconds.toFixed(1)} s`);

    const db = join(ctx.tmp, 'publish-changed.sqlite');
    const tree = join(ctx.tmp, 'publish-changed-tree');
    change = changedRelease(base.db, db);
    ctx.log(`  rendering release 2 (${change.changed} of ${fmt(change.isoforms)} isoforms changed)…`);
    await renderTree(db, tree, { progress: false });
    rmSync(db, { force: true });
    second = await publish({ dir: tree, bucket: BUCKET, s3, progress: false, concurrency: PARALLEL });
    ctx.log(`  release 2: ${fmt(second.uploaded)} of ${fmt(second.objects)} objects uploaded in ${second.seconds.toFixed(1)} s`);
    if (rclone) {
      rcloneSecond = await timeRclone(tree, 'release 2');
    }
    resynced = await mirror({ from: `s3://${BUCKET}`, to: mirrorDir, endpoint: s3rver.endpoint, progress: false, concurrency: PARALLEL });
    ctx.log(`  mirror, re-sync: ${fmt(resynced.fetched)} objects in ${resynced.seconds.toFixed(1)} s`);
  } finally {
    s3.destroy();
    await s3rver.stop();
  }
  const share = (100 * second.uploaded) / second.objects;
  const speedup = rcloneSecond === null ? null : rcloneSecond / second.seconds;
  const targets: Target[] = [
    { what: '1% change: objects uploaded', target: '≤ 2% of the release', measured: `${share.toFixed(2)}% (${fmt(second.uploaded)} of ${fmt(second.objects)})`, met: share <= 2 },
    {
      what: '1% change: publish vs `rclone sync` of the same change',
      target: '≥ 10× faster',
      measured: speedup === null ? 'rclone not installed' : `${speedup.toFixed(1)}× (${second.seconds.toFixed(1)} s vs ${rcloneSecond!.toFixed(1)} s)`,
      met: speedup === null ? null : speedup >= 10,
    },
    {
      what: 'first publish vs `rclone sync`',
      target: 'no slower',
      measured: rcloneFirst === null ? 'rclone not installed' : `${first.seconds.toFixed(1)} s vs ${rcloneFirst.toFixed(1)} s`,
      met: rcloneFirst === null ? null : first.seconds <= rcloneFirst,
    },
  ];
  const secs = (n: number | null) => (n === null ? '–' : n.toFixed(1));
  return {
    id: 'publish',
    title: '4. Publishing and mirroring (s3rver, beside rclone)',
    method:
      `The ${base.scale}-scale release (${fmt(files(base.tree))} files) on s3rver in its own process on loopback, ${PARALLEL} requests in flight for every tool. ` +
      '`publish()` (build/publish.ts) of the tree as release 1; `rclone sync` (Debian\'s rclone, default comparison by size and modification time, one attempt) of the same tree into another bucket of the same server; ' +
      '`mirror()` from s3:// into an empty directory. Then release 2: a copy of the release DB with the expression (TPM) of every 100th isoform changed ' +
      `(${change!.changed} of ${fmt(change!.isoforms)}), rendered, published, \`rclone sync\`ed over the first copy, and the mirror synced again. Figures are each tool's own wall time; object counts are \`publish()\`'s and \`mirror()\`'s summaries.`,
    tables: [
      {
        headers: ['step', 'objects of the release', 'objects uploaded or fetched', 'bytes', 'seconds', '`rclone sync` seconds'],
        rows: [
          ['publish release 1 (full)', fmt(first!.objects), fmt(first!.uploaded), `${fmt(first!.bytesUploaded)} (${mib(first!.bytesUploaded).toFixed(1)} MiB)`, first!.seconds.toFixed(1), secs(rcloneFirst)],
          ['publish release 2 (1% of isoforms changed)', fmt(second!.objects), fmt(second!.uploaded), fmt(second!.bytesUploaded), second!.seconds.toFixed(1), secs(rcloneSecond)],
          ['mirror, first sync (release 1)', fmt(mirrored!.fetched + mirrored!.reused), fmt(mirrored!.fetched), fmt(mirrored!.bytes), mirrored!.seconds.toFixed(1), '–'],
          ['mirror, re-sync (release 2, release 1 kept)', fmt(resynced!.fetched + resynced!.reused), fmt(resynced!.fetched), fmt(resynced!.bytes), resynced!.seconds.toFixed(1), '–'],
        ],
      },
    ],
    targets,
    notes: [
      ...rcloneFailures.map((f) => `rclone's single attempt ended with errors (${f}); its time is counted as if it had succeeded. s3rver rewrites an object in place, and rclone's in-place updates of modification times race with its reads.`),
      'publish knows what the store holds from release 1\'s manifest, reading only the manifest shards release 2 changed (no listing, no request per object); those reads are most of a 1% publish.',
      'At a 1% change nearly every manifest shard changes (each lists about 1,000 files), so most of release 2\'s bytes are its manifest.',
      'A re-rendered tree gives every file a new modification time: rclone then checks each object and rewrites its metadata in place where the content is the same, unless told `--checksum`; it is run as a user would type it.',
      's3rver stores each object as files on a local disk; S3 from outside AWS is slower per request, which favours the tool making fewer requests.',
    ],
    headline: `1% publish: ${fmt(second!.uploaded)} objects (${share.toFixed(2)}%) in ${second!.seconds.toFixed(1)} s${rcloneSecond === null ? '' : ` vs rclone ${rcloneSecond.toFixed(1)} s`}`,
  };
}

function countFiles(dir: string): number {
  let n = 0;
  for (const d of readdirSync(dir, { withFileTypes: true })) n += d.isDirectory() ? countFiles(join(dir, d.name)) : 1;
  return n;
}
