// Section 4: publishing and mirroring against s3rver (a real S3-protocol server), beside the tool a
// curator would pick instead, `rclone sync` of the same rendered tree to the same server, configured
// as rclone's documentation advises for S3 (--fast-list, --checksum, --s3-no-head). The scale is a
// parameter (--publish-scale: the demo release, or the human-scale tree of this run or --human-tree).
// Each run starts a new s3rver with a new bucket for each tool; the two tools take turns going first
// (publish then rclone, then rclone then publish, ...), for a first upload of the release and then a
// release with 1% of isoforms changed. Then two of s3rver's behaviours that decide how rclone fares
// against it are checked (bench/s3rver-probe.ts) and reported with the figures.
import Database from 'better-sqlite3';
import { copyFileSync, existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { publish, s3Client, type PublishSummary } from '../build/publish/publish.js';
import { PHASES } from '../build/publish/phases.js';
import { mirror, type MirrorSummary } from '../edge/mirror/mirror.js';
import { renderTree } from '../build/render/index.js';
import { startS3rver } from './s3rver.js';
import { treePaths, type ManifestIndex } from '../edge/contract/tree.js';
import { probeListing, probePutHead, type ListingProbe, type PutHeadProbe } from './s3rver-probe.js';
import { run, type BenchContext } from './context.js';
import type { SectionReport, Target } from './report.js';
import { fmt, fmtSummary, mib, summarize } from './stats.js';

/** Requests in flight, the same for both tools. */
const PARALLEL = 16;
/** PUTs of the s3rver probe (each followed by a HEAD), and how many in flight. */
const PROBE_PUTS = 3000;
const PROBE_PARALLEL = 32;

/** rclone's flags for S3, as its documentation advises (cited in the section's notes):
 * --fast-list lists the bucket by prefix without a delimiter, a request per 1,000 objects, instead of
 * folder by folder; --checksum compares size and MD5 (the listing's ETag) instead of the modification
 * time, which on S3 takes a HEAD per object; --s3-no-head skips the HEAD after each upload. */
export const RCLONE_FLAGS = ['--fast-list', '--checksum', '--s3-no-head'];

/** A copy of the release database with a new release name and 1% of isoforms' expression changed. */
export function changedRelease(baseDb: string, file: string): { release: string; isoforms: number; changed: number } {
  copyFileSync(baseDb, file);
  const db = new Database(file);
  try {
    const release = `${(db.prepare("SELECT value FROM release_meta WHERE key = 'release'").get() as { value: string }).value}-bench`;
    db.prepare("UPDATE release_meta SET value = ? WHERE key = 'release'").run(release);
    const isoforms = (db.prepare('SELECT count(*) AS n FROM isoforms').get() as { n: number }).n;
    // Every 100th isoform (by rowid): a spread-out 1%, as a re-quantified sample would touch.
    const changed = db
      .prepare('UPDATE isoforms SET expression_tpm = coalesce(expression_tpm, 0) + 1 WHERE rowid % 100 = 0')
      .run().changes;
    return { release, isoforms, changed };
  } finally {
    db.close();
  }
}

/** GNU time, which reports a command's CPU; and how its line is told apart. */
const TIME = '/usr/bin/time';
const RUSAGE_TAG = 'ISOATLAS_RUSAGE';

/** rclone's version when Debian's rclone is installed (null without it: the comparison is then left
 * out, and said so). */
export async function rcloneInstalled(): Promise<string | null> {
  return run('env', ['-u', 'AWS_CA_BUNDLE', 'rclone', 'version']).then(
    (out) => out.stdout.split('\n')[0].trim(),
    () => null,
  );
}

/** `rclone <verb> <from> <to>`, timed. With `endpoint`, `bench:<bucket>` names a bucket of the
 * s3rver there (the remote is configured through the environment, and S3's flags apply); without,
 * both ends are local directories. rclone from Debian refuses to start while AWS_CA_BUNDLE is set,
 * so it runs without it. */
export async function rclone(
  verb: 'sync' | 'copy',
  from: string,
  to: string,
  endpoint?: string,
  extraArgs: string[] = [],
): Promise<{ seconds: number; failure: string | null; cpuSeconds: number | null }> {
  const env: NodeJS.ProcessEnv = endpoint
    ? {
        RCLONE_CONFIG_BENCH_TYPE: 's3',
        RCLONE_CONFIG_BENCH_PROVIDER: 'Other',
        RCLONE_CONFIG_BENCH_ENDPOINT: endpoint,
        RCLONE_CONFIG_BENCH_ACCESS_KEY_ID: 'S3RVER',
        RCLONE_CONFIG_BENCH_SECRET_ACCESS_KEY: 'S3RVER',
        RCLONE_CONFIG_BENCH_FORCE_PATH_STYLE: 'true',
      }
    : {};
  const started = performance.now();
  // One attempt (`--retries 1`): by default rclone repeats a sync that had errors up to 3 times; one
  // attempt is the least a user waits, so it can only flatter rclone. A failure is reported, not fatal.
  // Its CPU (user + system) as /usr/bin/time reports it, when there is one.
  const time = existsSync(TIME) ? [TIME, '-f', `${RUSAGE_TAG} %U %S`] : [];
  const args = [
    '-u',
    'AWS_CA_BUNDLE',
    ...time,
    'rclone',
    verb,
    from,
    to,
    ...(endpoint ? RCLONE_FLAGS : []),
    ...extraArgs,
    '--transfers',
    String(PARALLEL),
    '--checkers',
    String(PARALLEL),
    '--retries',
    '1',
  ];
  let said = '';
  const failure = await run('env', args, { env }).then(
    (out) => {
      said = out.stderr;
      return null;
    },
    (err: Error) => {
      said = err.message;
      return (
        err.message
          .split('\n')
          .filter((l) => /ERROR/.test(l))
          .slice(-1)[0] ?? err.message.split('\n')[0]
      );
    },
  );
  const rusage = new RegExp(`${RUSAGE_TAG} ([\\d.]+) ([\\d.]+)`).exec(said);
  return {
    seconds: (performance.now() - started) / 1000,
    failure,
    cpuSeconds: rusage ? Number(rusage[1]) + Number(rusage[2]) : null,
  };
}

interface ToolRun {
  seconds: number;
  /** CPU seconds (user + system): publish's in this process, rclone's by /usr/bin/time. */
  cpu: number | null;
}

interface RunResult {
  run: number;
  publishFirst: boolean;
  /** Load average (1 min) when the run started. */
  load: number;
  first: PublishSummary;
  second: PublishSummary;
  publishCpu: [number, number];
  rcloneFirst: ToolRun | null;
  rcloneSecond: ToolRun | null;
}

/** The runs at one scale, and what run 1 measured beside them (the mirror, s3rver's listing). */
interface ScaleRuns {
  scale: 'demo' | 'human';
  files: number;
  change: { isoforms: number; changed: number };
  tree2: string;
  runs: RunResult[];
  mirrored: MirrorSummary | null;
  resynced: MirrorSummary | null;
  listing: ListingProbe | null;
}

export const RCLONE_DOCS = {
  fastList: 'https://rclone.org/s3/#avoiding-get-requests-to-read-directory-listings',
  checksum: 'https://rclone.org/s3/#avoiding-head-requests-to-read-the-modification-time',
  noHead: 'https://rclone.org/s3/#avoiding-head-requests-after-put',
  flags: 'https://rclone.org/flags/',
};

const ratio = (n: number) => `${n.toFixed(1)}×`;

/** The scales of this run: `demo+human` runs the demo's pairs and one pair on the human-scale tree. */
function scalesOf(opt: BenchContext['opts']['publishScale']): ('demo' | 'human')[] {
  return opt === 'demo+human' ? ['demo', 'human'] : [opt];
}

export async function benchPublish(ctx: BenchContext): Promise<SectionReport> {
  const rcloneVersion = await rcloneInstalled();
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const rcloneFailures: string[] = [];
  const measured: ScaleRuns[] = [];
  let probeTree = '';
  for (const [k, scale] of scalesOf(ctx.opts.publishScale).entries()) {
    let base: { db: string; tree: string };
    if (scale === 'human') {
      const human = ctx.human();
      if (!human)
        throw new Error(
          '--publish-scale human needs a human-scale tree: run the build section in the same run, or pass --human-tree <dir>',
        );
      base = { db: join(human.work, 'release.sqlite'), tree: human.tree };
    } else {
      base = await ctx.demo();
    }
    probeTree ||= base.tree;
    // The first scale runs the pairs asked for; a second (demo+human) one pair.
    const pairs = ctx.opts.quick ? 1 : k === 0 ? ctx.opts.publishPairs : 1;
    measured.push(await runScale(ctx, scale, base, pairs, rcloneVersion, rcloneFailures));
  }

  // PUT then HEAD at once, on a server of its own once the timed runs are over.
  const probeDir = join(ctx.tmp, 's3rver-probe');
  const probeServer = await startS3rver(probeDir, ['probe']);
  const probeS3 = s3Client({ endpoint: probeServer.endpoint, region: 'us-east-1' });
  let putHead: PutHeadProbe;
  try {
    ctx.log(`  s3rver probe: ${ctx.opts.quick ? 300 : PROBE_PUTS} PUTs each followed by a HEAD, twice…`);
    putHead = await probePutHead(
      probeS3,
      'probe',
      probeTree,
      ctx.opts.quick ? 300 : PROBE_PUTS,
      PROBE_PARALLEL,
      probeDir,
    );
    ctx.log(
      `  s3rver probe: ${putHead.passes.map((p) => `${p.pass}: ${p.shortFiles} files short on disk at the answer, ${p.shortHeads} short HEADs (sizes ${p.sizesSeen.join(', ') || '–'})`).join('; ')}`,
    );
  } finally {
    probeS3.destroy();
    await probeServer.stop();
  }
  return report(measured, putHead!, rcloneVersion, rcloneFailures);
}

/** `pairs` pairs of runs at one scale, each on a new s3rver, the tools alternating first. */
async function runScale(
  ctx: BenchContext,
  scale: 'demo' | 'human',
  base: { db: string; tree: string },
  pairs: number,
  rcloneVersion: string | null,
  rcloneFailures: string[],
): Promise<ScaleRuns> {
  const files = countFiles(base.tree);
  // Release 2, rendered once for every run: its files are the same whichever tool uploads them.
  const changedDb = join(ctx.tmp, `publish-changed-${scale}.sqlite`);
  const tree2 = join(ctx.tmp, `publish-changed-tree-${scale}`);
  const change = changedRelease(base.db, changedDb);
  ctx.log(
    `  ${scale} scale (${fmt(files)} files): rendering release 2 (${change.changed} of ${fmt(change.isoforms)} isoforms changed)…`,
  );
  await renderTree(changedDb, tree2, { progress: false });
  rmSync(changedDb, { force: true });

  const out: ScaleRuns = { scale, files, change, tree2, runs: [], mirrored: null, resynced: null, listing: null };
  const nRuns = 2 * pairs;
  for (let i = 0; i < nRuns; i++) {
    const n = i + 1;
    // Alternating order: publish first in odd runs, rclone first in even ones.
    const publishFirst = i % 2 === 0;
    const load = loadavg()[0];
    const bucket = `isoatlas-run${n}`;
    const rcloneBucket = `rclone-run${n}`;
    const s3rver = await startS3rver(join(ctx.tmp, `s3rver-${scale}-run${n}`), [bucket, rcloneBucket], {
      conditionalWrites: true,
    });
    const s3 = s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' });
    const both = async (dir: string, which: string) => {
      const doPublish = async () => {
        const cpu = process.cpuUsage();
        const p = await publish({ dir, bucket, s3, progress: false, concurrency: PARALLEL });
        const used = process.cpuUsage(cpu);
        return { p, cpu: (used.user + used.system) / 1e6 };
      };
      const doRclone = async (): Promise<ToolRun | null> => {
        if (!rcloneVersion) return null;
        const r = await rclone('sync', dir, `bench:${rcloneBucket}`, s3rver.endpoint);
        if (r.failure) rcloneFailures.push(`${scale} run ${n}, ${which}: ${r.failure}`);
        return { seconds: r.seconds, cpu: r.cpuSeconds };
      };
      let p: { p: PublishSummary; cpu: number };
      let r: ToolRun | null;
      if (publishFirst) {
        p = await doPublish();
        r = await doRclone();
      } else {
        r = await doRclone();
        p = await doPublish();
      }
      const phases = PHASES.map((ph) => `${ph} ${(p.p.phases.seconds[ph] ?? 0).toFixed(1)}`).join(', ');
      ctx.log(
        `  ${scale} run ${n}/${nRuns} (${publishFirst ? 'publish' : 'rclone'} first, load ${load.toFixed(2)}), ${which}: publish ${fmt(p.p.uploaded)} of ${fmt(p.p.objects)} objects in ${p.p.seconds.toFixed(1)} s (CPU ${p.cpu.toFixed(1)} s; ${phases} s)${r === null ? '' : `, rclone ${r.seconds.toFixed(1)} s (CPU ${r.cpu?.toFixed(1) ?? '?'} s; ${ratio(r.seconds / p.p.seconds)})`}`,
      );
      return { p, r };
    };
    try {
      const one = await both(base.tree, 'release 1');
      if (i === 0) {
        out.mirrored = await mirror({
          from: `s3://${bucket}`,
          to: join(ctx.tmp, `bench-mirror-${scale}`),
          endpoint: s3rver.endpoint,
          progress: false,
          concurrency: PARALLEL,
        });
        ctx.log(`  mirror, first sync: ${fmt(out.mirrored.fetched)} objects in ${out.mirrored.seconds.toFixed(1)} s`);
      }
      const two = await both(tree2, 'release 2 (1% changed)');
      if (i === 0) {
        out.resynced = await mirror({
          from: `s3://${bucket}`,
          to: join(ctx.tmp, `bench-mirror-${scale}`),
          endpoint: s3rver.endpoint,
          progress: false,
          concurrency: PARALLEL,
        });
        ctx.log(`  mirror, re-sync: ${fmt(out.resynced.fetched)} objects in ${out.resynced.seconds.toFixed(1)} s`);
        // What rclone would see listing its bucket folder by folder (without --fast-list).
        if (rcloneVersion) out.listing = await probeListing(s3, rcloneBucket, tree2);
      }
      out.runs.push({
        run: n,
        publishFirst,
        load,
        first: one.p.p,
        second: two.p.p,
        publishCpu: [one.p.cpu, two.p.cpu],
        rcloneFirst: one.r,
        rcloneSecond: two.r,
      });
    } finally {
      s3.destroy();
      await s3rver.stop();
    }
  }
  return out;
}

/** The section: per-run and summary tables for each scale, the targets on the first. */
/** A scale as the tables name it: the demo, or the synthetic release's size (the human-scale tree, or
 * any other given with --human-tree). */
const nameOf = (m: ScaleRuns) => (m.scale === 'demo' ? 'demo' : `synthetic, ${fmt(m.files)} files`);
/** The same in a sentence, its parenthesis left open: `the demo release (28,842 files`. */
const releaseOf = (m: ScaleRuns, first = false) =>
  `${first ? 'The' : 'the'} ${m.scale === 'demo' ? 'demo' : 'synthetic'} release (${fmt(m.files)} files`;

function report(
  measured: ScaleRuns[],
  putHead: PutHeadProbe,
  rcloneVersion: string | null,
  rcloneFailures: string[],
): SectionReport {
  const main = measured[0];
  const { runs } = main;
  const first = runs[0].first;
  const second = runs[0].second;
  const s = (xs: number[], digits = 1, unit = '') => fmtSummary(summarize(xs), digits, unit);
  const fmtRatios = (xs: number[]) => {
    const sum = summarize(xs);
    return sum.n === 1 ? ratio(sum.median) : `${ratio(sum.median)} (${ratio(sum.min)}–${ratio(sum.max)})`;
  };
  const ratiosOf = (rs: RunResult[]) => {
    const withRclone = rs.filter((r) => r.rcloneFirst !== null && r.rcloneSecond !== null);
    return {
      withRclone,
      pub1: rs.map((r) => r.first.seconds),
      pub2: rs.map((r) => r.second.seconds),
      rc1: withRclone.map((r) => r.rcloneFirst!.seconds),
      rc2: withRclone.map((r) => r.rcloneSecond!.seconds),
      ratio1: withRclone.map((r) => r.rcloneFirst!.seconds / r.first.seconds),
      ratio2: withRclone.map((r) => r.rcloneSecond!.seconds / r.second.seconds),
    };
  };
  const below = (xs: number[], limit: number) => xs.filter((x) => x < limit).length;
  const share = (100 * second.uploaded) / second.objects;
  const manifestFull = fullManifestBytes(main.tree2);
  const manifestShare = (100 * second.manifestBytesUploaded) / manifestFull;
  const speedTargets = (m: ScaleRuns): Target[] => {
    const r = ratiosOf(m.runs);
    const median1 = r.ratio1.length ? summarize(r.ratio1).median : null;
    const median2 = r.ratio2.length ? summarize(r.ratio2).median : null;
    const what = m.scale === main.scale ? '' : `${nameOf(m)}, `;
    const runsText = `${r.withRclone.length} run${r.withRclone.length === 1 ? '' : 's'}`;
    return [
      {
        what: `${what}1% change: publish vs \`rclone sync\` of the same change (median of the per-run ratios)`,
        target: '≥ 10× faster',
        measured:
          median2 === null
            ? 'rclone not installed'
            : `${fmtRatios(r.ratio2)} over ${runsText}; ${s(r.pub2)} s vs ${s(r.rc2)} s${below(r.ratio2, 10) ? `; below 10× in ${below(r.ratio2, 10)} of ${r.ratio2.length} runs` : ''}`,
        met: median2 === null ? null : median2 >= 10,
      },
      {
        what: `${what}first publish (objects and packs) vs \`rclone sync\` of the objects (median of the per-run ratios)`,
        target: '≥ 1.0× (no slower)',
        measured:
          median1 === null
            ? 'rclone not installed'
            : `${fmtRatios(r.ratio1)} over ${runsText}; ${s(r.pub1)} s vs ${s(r.rc1)} s${below(r.ratio1, 1) ? `; publish slower in ${below(r.ratio1, 1)} of ${r.ratio1.length} runs` : ''}`,
        met: median1 === null ? null : median1 >= 1,
      },
    ];
  };
  const targets: Target[] = [
    {
      what: '1% change: objects uploaded',
      target: '≤ 2% of the release',
      measured: `${share.toFixed(2)}% (${fmt(second.uploaded)} of ${fmt(second.objects)})`,
      met: share <= 2,
    },
    {
      what: '1% change: manifest bytes rewritten',
      target: '≤ 10%',
      measured: `${manifestShare.toFixed(2)}% (${fmt(second.manifestBytesUploaded)} of ${fmt(manifestFull)} bytes of manifest.json and its shards)`,
      met: manifestShare <= 10,
    },
    ...measured.flatMap(speedTargets),
  ];
  const secs = (n: number | null | undefined) => (n === null || n === undefined ? '–' : n.toFixed(1));
  const perRun = (m: ScaleRuns) =>
    m.runs.map((r) => [
      nameOf(m),
      String(r.run),
      r.publishFirst ? 'publish, rclone' : 'rclone, publish',
      r.load.toFixed(2),
      r.first.seconds.toFixed(1),
      secs(r.rcloneFirst?.seconds),
      r.rcloneFirst === null ? '–' : ratio(r.rcloneFirst.seconds / r.first.seconds),
      r.second.seconds.toFixed(1),
      secs(r.rcloneSecond?.seconds),
      r.rcloneSecond === null ? '–' : ratio(r.rcloneSecond.seconds / r.second.seconds),
    ]);
  const cpuRows = (m: ScaleRuns) =>
    m.runs.map((r) => [
      nameOf(m),
      String(r.run),
      r.publishCpu[0].toFixed(1),
      secs(r.rcloneFirst?.cpu),
      r.publishCpu[1].toFixed(1),
      secs(r.rcloneSecond?.cpu),
    ]);
  const phaseRows = (m: ScaleRuns) =>
    m.runs.flatMap((r) =>
      (
        [
          ['release 1', r.first],
          ['1% change', r.second],
        ] as const
      ).map(([which, p]) => [
        nameOf(m),
        String(r.run),
        which,
        ...PHASES.map((ph) => secs(p.phases.seconds[ph])),
        secs(p.phases.firstUpload),
        p.seconds.toFixed(1),
      ]),
    );
  const notes: string[] = [];
  notes.push(
    `Scale: ${measured.map((m) => `${releaseOf(m)}, ${fmt(m.change.isoforms)} isoforms; ${m.runs.length} runs)`).join(' and ')}; the scale is chosen with \`--publish-scale demo|human|demo+human\` (human: the tree the build section made in the same run, or \`--human-tree\`; demo+human runs one pair on it after the demo's). The summary table, the mirror and the first two targets are the first scale's.`,
    `The machine is a shared 2-core box on which other work (builds and test runs in other worktrees) ran during the measurements; the load average when each run started is in the per-run table. The tools took turns going first on new buckets, so that load weighs on both alike; it is part of the spread over runs. \`publish()\` runs in the bench's own Node process, rclone in a process of its own. CPU: publish's is \`process.cpuUsage()\` of the bench process over the call, rclone's what /usr/bin/time reports for its process (user + system).`,
    `rclone (${rcloneVersion ?? 'not installed'}) runs with \`${RCLONE_FLAGS.join(' ')}\`, as its S3 documentation advises: \`--fast-list\` reads the bucket's listing with one request per 1,000 objects instead of one listing per directory (${RCLONE_DOCS.fastList}); \`--checksum\` compares size and MD5 (the listing's ETag) instead of modification times, which on S3 cost a HEAD per object, and the same page says to use these flags with \`--fast-list\` (${RCLONE_DOCS.checksum}; ${RCLONE_DOCS.flags}: "Check for changes with size & checksum"); \`--s3-no-head\` skips the HEAD rclone sends after every upload to check it, at the price of a higher chance of an undetected failed upload (${RCLONE_DOCS.noHead}). Both tools have ${PARALLEL} requests in flight (\`--transfers\`, \`--checkers\`); rclone makes one attempt (\`--retries 1\`).`,
    "Phases (publish's own, build/publish/phases.ts, also at `--log-level debug`): tree = reading the tree's manifest; history = the store's history, pointer and kept manifests and pack lists; hash = checking the tree, which cuts and hashes the packs in the same read; probe = the conditional-write check; manifest = the manifest's objects and the pending entry; objects and packs = from the first PUT of each to its last (one pass: a pack goes up as the next is filled, its objects on the way); pointer = kept and current. `first PUT` is when the first object went up, in seconds from the start. Publish packs what it adds (packs/, for mirrors), so its first publish sends about twice the bytes rclone does.",
  );
  const listing = main.listing;
  if (listing) {
    const gone = listing.missing.filter((m) => m.foundWithoutDelimiter);
    notes.push(
      gone.length
        ? `s3rver's folder-style listing (checked on rclone's bucket after run 1): a root listing with delimiter "/" named ${listing.listed.map((l) => `\`${l}\``).join(', ') || 'nothing'}, leaving out ${gone.map((m) => `\`${m.name}\` (${fmt(m.files)} of the ${fmt(main.files)} files)`).join(', ')}, whose objects a listing of that prefix without a delimiter does find. s3rver's store walks one directory below the prefix and names a common prefix only for an object it meets there; \`api/\` holds nothing but \`api/v1/…\`. rclone without \`--fast-list\` lists folder by folder, so it finds no \`api/\` in the bucket and uploads it whole on every sync: that, not rclone, made the earlier comparison's "1% change" as slow as a full upload.`
        : `s3rver's folder-style listing (checked on rclone's bucket after run 1): a root listing with delimiter "/" named every top-level entry of the tree (${listing.listed.length}); the missing-prefix behaviour was not seen in this run.`,
      `s3rver's listing without a delimiter (as \`--fast-list\` reads it, ${fmt(listing.flat.files)} files in the bucket): ${fmt(listing.flat.keys)} keys returned over ${listing.flat.pages} pages, ${fmt(listing.flat.distinct)} distinct` +
        (listing.flat.keys > listing.flat.distinct
          ? `; ${fmt(listing.flat.keys - listing.flat.distinct)} keys came twice, ${fmt(listing.flat.repeatsAtPageStart)} of them at the start of a page that repeated the previous page's last keys. rclone logs such keys as "Duplicate object found in destination - ignoring".`
          : '.'),
    );
  }
  const [fresh, rewrite] = putHead.passes;
  const shortHeads = fresh.shortHeads + rewrite.shortHeads;
  const shortFiles = fresh.shortFiles + rewrite.shortFiles;
  const sizesSeen = [...new Set([...fresh.sizesSeen, ...rewrite.sizesSeen])].sort((x, y) => x - y);
  const plural = (n: number, one: string, many: string) => `${fmt(n)} ${n === 1 ? one : many}`;
  const seenText =
    shortHeads > 0
      ? `A HEAD sent at once saw a short object (sizes seen: ${sizesSeen.join(', ')}), and the full size was there at most ${Math.ceil(Math.max(...putHead.passes.map((p) => p.msUntilFullMax)))} ms after the answer: the earlier run's "corrupted on transfer: sizes differ N vs 0" errors are this, seen by rclone's HEAD after upload, not a matter of modification times.`
      : shortFiles > 0
        ? "No HEAD saw a short object here, but the object's file was short at the moment of the answer, so the window is there; the earlier run's \"corrupted on transfer: sizes differ N vs 0\" errors came from the check that can fall into it, rclone's HEAD after upload, not from modification times."
        : 'This probe saw no short object, so the window is narrow at this load; the earlier run\'s "corrupted on transfer: sizes differ N vs 0" errors came from the check that can fall into it, rclone\'s HEAD after upload, not from modification times.';
  notes.push(
    `s3rver and HEAD after PUT (probe on a server of its own after the timed runs): ${fmt(putHead.puts)} tree files PUT with ${putHead.concurrency} in flight, each followed at once by a HEAD, then the same keys PUT again (rewritten). ` +
      `New keys: ${plural(fresh.shortHeads, 'HEAD', 'HEADs')} saw another size than was sent, ${plural(fresh.shortFiles, 'object file was', 'object files were')} short on s3rver's disk the moment the PUT was answered; ` +
      `rewritten keys: ${plural(rewrite.shortHeads, 'HEAD', 'HEADs')}, ${plural(rewrite.shortFiles, 'file', 'files')} short on disk; once all PUTs were done, ${plural(putHead.shortAfterwards, 'object was', 'objects were')} short. ` +
      "s3rver's filesystem store answers a PUT once the body has passed its MD5 hash, while its file stream may still be writing the bytes (a rewrite opens the file truncated), and a HEAD reports the file's size on disk. " +
      `${seenText} With \`--s3-no-head\` rclone does not make that check; \`publish()\` sends no HEAD after a PUT.`,
  );
  notes.push(
    ...rcloneFailures.map(
      (f) => `rclone's single attempt ended with errors (${f}); its time is counted as if it had succeeded.`,
    ),
    "publish knows what the store holds from release 1's manifest, reading only the manifest shards release 2 changed (no listing, no request per object). A 1% publish spends nearly all its time before its first PUT (the phase table): reading the tree's own manifest into its ledger (tree), the store's manifests and what they list (history), and the check of the tree (hash): the files it uploads are read and hashed, and every other file's size is checked by a worker thread meanwhile (build/publish/tree-check.ts). rclone with `--fast-list --checksum` lists the whole bucket and hashes every local file on each sync, which is most of its time for a 1% change (s3rver lists slowly: its listing stats every object file and reads its metadata).",
    "At a 1% change nearly every manifest shard changes (each lists about 1,000 files), so most of release 2's bytes are its manifest.",
    's3rver stores each object as files on a local disk; S3 from outside AWS is slower per request, which favours the tool making fewer requests.',
  );
  const r = ratiosOf(runs);
  const phaseHeaders = ['scale', 'run', 'release', ...PHASES, 'first PUT at', 'total'];
  return {
    id: 'publish',
    title: '4. Publishing and mirroring (s3rver, beside rclone)',
    method:
      `${measured.map((m, i) => `${releaseOf(m, i === 0)}), ${m.runs.length} runs`).join('; ')}, on s3rver with conditional writes (bin/local-s3.cjs, which publish requires; rclone sends none) in its own process on loopback. Each run starts a new s3rver with a new bucket for each tool, and the tools take turns going first (run 1 publish then rclone, run 2 rclone then publish, …). ` +
      `In each run: release 1 uploaded in full by \`publish()\` (build/publish/publish.ts: its objects and its packs) and by \`rclone sync\` (Debian's rclone, \`${RCLONE_FLAGS.join(' ')}\`, one attempt; the objects alone) into its own bucket; then release 2, a copy of the release DB with the expression (TPM) of every 100th isoform changed ` +
      `(${main.change.changed} of ${fmt(main.change.isoforms)} at the first scale), rendered once for all runs, published and \`rclone sync\`ed over release 1 the same way. In run 1 of the first scale only, \`mirror()\` from s3:// into an empty directory after release 1 and again after release 2. ` +
      "Figures are each tool's own wall time; object counts are `publish()`'s and `mirror()`'s summaries; a ratio is rclone's time over publish's in the same run.",
    tables: [
      {
        caption: `**Per run** (seconds; ratio = rclone ÷ publish).`,
        headers: [
          'scale',
          'run',
          'order',
          'load avg at start',
          'release 1: publish',
          'release 1: rclone',
          'ratio',
          '1% change: publish',
          '1% change: rclone',
          'ratio',
        ],
        rows: measured.flatMap(perRun),
      },
      {
        caption: "**CPU** (seconds, user + system) of each tool's process over the same runs.",
        headers: ['scale', 'run', 'release 1: publish', 'release 1: rclone', '1% change: publish', '1% change: rclone'],
        rows: measured.flatMap(cpuRows),
      },
      {
        caption:
          "**Publish's phases** (seconds; objects and packs overlap: each is its first PUT's start to its last PUT's end).",
        headers: phaseHeaders,
        rows: measured.flatMap(phaseRows),
      },
      {
        caption: `**Summary** (${main.scale} scale): median (min–max) over ${runs.length} runs; the mirror from run 1 only.`,
        headers: [
          'step',
          'objects of the release',
          'objects uploaded or fetched',
          'bytes',
          'publish / mirror seconds',
          '`rclone sync` seconds',
          'rclone ÷ publish',
        ],
        rows: [
          [
            'release 1 (full)',
            fmt(first.objects),
            fmt(first.uploaded),
            `${fmt(first.bytesUploaded)} (${mib(first.bytesUploaded).toFixed(1)} MiB) + packs ${fmt(first.packBytes)} (${mib(first.packBytes).toFixed(1)} MiB)`,
            s(r.pub1),
            r.rc1.length ? s(r.rc1) : '–',
            r.ratio1.length ? fmtRatios(r.ratio1) : '–',
          ],
          [
            'release 2 (1% of isoforms changed)',
            fmt(second.objects),
            fmt(second.uploaded),
            `${fmt(second.bytesUploaded)} + packs ${fmt(second.packBytes)}`,
            s(r.pub2),
            r.rc2.length ? s(r.rc2) : '–',
            r.ratio2.length ? fmtRatios(r.ratio2) : '–',
          ],
          [
            'mirror, first sync (release 1)',
            fmt(main.mirrored!.fetched + main.mirrored!.reused),
            fmt(main.mirrored!.fetched),
            fmt(main.mirrored!.bytes),
            main.mirrored!.seconds.toFixed(1),
            '–',
            '–',
          ],
          [
            'mirror, re-sync (release 2, release 1 kept)',
            // What the releases list, not what the sync looked at: it reads only shards that changed.
            fmt(second.objects),
            fmt(main.resynced!.fetched),
            fmt(main.resynced!.bytes),
            main.resynced!.seconds.toFixed(1),
            '–',
            '–',
          ],
        ],
      },
    ],
    targets,
    notes,
    headline: measured
      .map((m) => {
        const x = ratiosOf(m.runs);
        return `${nameOf(m)}, ${m.runs.length} runs: first publish ${x.ratio1.length ? `${fmtRatios(x.ratio1)} of rclone's speed` : `${s(x.pub1)} s`}, 1% change ${x.ratio2.length ? `${fmtRatios(x.ratio2)} faster than rclone` : `${s(x.pub2)} s`}`;
      })
      .join('; '),
  };
}

/** Bytes of a rendered tree's whole manifest: manifest.json and every shard it lists. */
function fullManifestBytes(dir: string): number {
  const body = readFileSync(join(dir, treePaths.manifest));
  const index = JSON.parse(body.toString('utf8')) as ManifestIndex;
  return body.length + index.shards.reduce((n, s) => n + s.size, 0);
}

function countFiles(dir: string): number {
  let n = 0;
  for (const d of readdirSync(dir, { withFileTypes: true })) n += d.isDirectory() ? countFiles(join(dir, d.name)) : 1;
  return n;
}
