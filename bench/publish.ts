// Section 4: publishing and mirroring against s3rver (a real S3-protocol server), beside the tool a
// curator would pick instead, `rclone sync` of the same rendered tree to the same server, configured
// as rclone's documentation advises for S3 (--fast-list, --checksum, --s3-no-head). The scale is a
// parameter (--publish-scale: the demo release, or the human-scale tree of this run or --human-tree).
// Each run starts a new s3rver with a new bucket for each tool; the two tools take turns going first
// (publish then rclone, then rclone then publish, ...), for a first upload of the release and then a
// release with 1% of isoforms changed. Then two of s3rver's behaviours that decide how rclone fares
// against it are checked (bench/s3rver-probe.ts) and reported with the figures.
import Database from 'better-sqlite3';
import { copyFileSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { loadavg } from 'node:os';
import { publish, s3Client, type PublishSummary } from '../build/publish/publish.js';
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
): Promise<{ seconds: number; failure: string | null }> {
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
  const args = [
    '-u',
    'AWS_CA_BUNDLE',
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
  const failure = await run('env', args, { env }).then(
    () => null,
    (err: Error) =>
      err.message
        .split('\n')
        .filter((l) => /ERROR/.test(l))
        .slice(-1)[0] ?? err.message.split('\n')[0],
  );
  return { seconds: (performance.now() - started) / 1000, failure };
}

interface RunResult {
  run: number;
  publishFirst: boolean;
  /** Load average (1 min) when the run started. */
  load: number;
  first: PublishSummary;
  second: PublishSummary;
  rcloneFirst: number | null;
  rcloneSecond: number | null;
}

export const RCLONE_DOCS = {
  fastList: 'https://rclone.org/s3/#avoiding-get-requests-to-read-directory-listings',
  checksum: 'https://rclone.org/s3/#avoiding-head-requests-to-read-the-modification-time',
  noHead: 'https://rclone.org/s3/#avoiding-head-requests-after-put',
  flags: 'https://rclone.org/flags/',
};

const ratio = (n: number) => `${n.toFixed(1)}×`;

export async function benchPublish(ctx: BenchContext): Promise<SectionReport> {
  const scale = ctx.opts.publishScale;
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
  const files = countFiles(base.tree);
  const rcloneVersion = await rcloneInstalled();
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';

  // Release 2, rendered once for every run: its files are the same whichever tool uploads them.
  const changedDb = join(ctx.tmp, 'publish-changed.sqlite');
  const tree2 = join(ctx.tmp, 'publish-changed-tree');
  const change = changedRelease(base.db, changedDb);
  ctx.log(
    `  ${scale} scale (${fmt(files)} files): rendering release 2 (${change.changed} of ${fmt(change.isoforms)} isoforms changed)…`,
  );
  await renderTree(changedDb, tree2, { progress: false });
  rmSync(changedDb, { force: true });

  const runs: RunResult[] = [];
  const rcloneFailures: string[] = [];
  let mirrored: MirrorSummary | null = null;
  let resynced: MirrorSummary | null = null;
  let listing: ListingProbe | null = null;
  const nRuns = ctx.opts.quick ? 2 : 2 * ctx.opts.publishPairs;
  for (let i = 0; i < nRuns; i++) {
    const n = i + 1;
    // Alternating order: publish first in odd runs, rclone first in even ones.
    const publishFirst = i % 2 === 0;
    const load = loadavg()[0];
    const bucket = `isoatlas-run${n}`;
    const rcloneBucket = `rclone-run${n}`;
    const s3rver = await startS3rver(join(ctx.tmp, `s3rver-run${n}`), [bucket, rcloneBucket], {
      conditionalWrites: true,
    });
    const s3 = s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' });
    const both = async (dir: string, which: string) => {
      const doPublish = () => publish({ dir, bucket, s3, progress: false, concurrency: PARALLEL });
      const doRclone = async () => {
        if (!rcloneVersion) return null;
        const r = await rclone('sync', dir, `bench:${rcloneBucket}`, s3rver.endpoint);
        if (r.failure) rcloneFailures.push(`run ${n}, ${which}: ${r.failure}`);
        return r.seconds;
      };
      let p: PublishSummary;
      let r: number | null;
      if (publishFirst) {
        p = await doPublish();
        r = await doRclone();
      } else {
        r = await doRclone();
        p = await doPublish();
      }
      ctx.log(
        `  run ${n}/${nRuns} (${publishFirst ? 'publish' : 'rclone'} first, load ${load.toFixed(2)}), ${which}: publish ${fmt(p.uploaded)} of ${fmt(p.objects)} objects in ${p.seconds.toFixed(1)} s${r === null ? '' : `, rclone ${r.toFixed(1)} s (${ratio(r / p.seconds)})`}`,
      );
      return { p, r };
    };
    try {
      const one = await both(base.tree, 'release 1');
      if (i === 0) {
        mirrored = await mirror({
          from: `s3://${bucket}`,
          to: join(ctx.tmp, 'bench-mirror'),
          endpoint: s3rver.endpoint,
          progress: false,
          concurrency: PARALLEL,
        });
        ctx.log(`  mirror, first sync: ${fmt(mirrored.fetched)} objects in ${mirrored.seconds.toFixed(1)} s`);
      }
      const two = await both(tree2, 'release 2 (1% changed)');
      if (i === 0) {
        resynced = await mirror({
          from: `s3://${bucket}`,
          to: join(ctx.tmp, 'bench-mirror'),
          endpoint: s3rver.endpoint,
          progress: false,
          concurrency: PARALLEL,
        });
        ctx.log(`  mirror, re-sync: ${fmt(resynced.fetched)} objects in ${resynced.seconds.toFixed(1)} s`);
        // What rclone would see listing its bucket folder by folder (without --fast-list).
        if (rcloneVersion) listing = await probeListing(s3, rcloneBucket, tree2);
      }
      runs.push({ run: n, publishFirst, load, first: one.p, second: two.p, rcloneFirst: one.r, rcloneSecond: two.r });
    } finally {
      s3.destroy();
      await s3rver.stop();
    }
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
      base.tree,
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

  const first = runs[0].first;
  const second = runs[0].second;
  const s = (xs: number[], digits = 1, unit = '') => fmtSummary(summarize(xs), digits, unit);
  const pub1 = runs.map((r) => r.first.seconds);
  const pub2 = runs.map((r) => r.second.seconds);
  const withRclone = runs.filter((r) => r.rcloneFirst !== null && r.rcloneSecond !== null);
  const rc1 = withRclone.map((r) => r.rcloneFirst!);
  const rc2 = withRclone.map((r) => r.rcloneSecond!);
  const ratio1 = withRclone.map((r) => r.rcloneFirst! / r.first.seconds);
  const ratio2 = withRclone.map((r) => r.rcloneSecond! / r.second.seconds);
  const fmtRatios = (xs: number[]) => {
    const sum = summarize(xs);
    return sum.n === 1 ? ratio(sum.median) : `${ratio(sum.median)} (${ratio(sum.min)}–${ratio(sum.max)})`;
  };
  const share = (100 * second.uploaded) / second.objects;
  const manifestFull = fullManifestBytes(tree2);
  const manifestShare = (100 * second.manifestBytesUploaded) / manifestFull;
  const ratio1Median = ratio1.length ? summarize(ratio1).median : null;
  const ratio2Median = ratio2.length ? summarize(ratio2).median : null;
  const below = (xs: number[], limit: number) => xs.filter((x) => x < limit).length;
  const runsText = `${withRclone.length} runs`;
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
    {
      what: '1% change: publish vs `rclone sync` of the same change (median of the per-run ratios)',
      target: '≥ 10× faster',
      measured:
        ratio2Median === null
          ? 'rclone not installed'
          : `${fmtRatios(ratio2)} over ${runsText}; ${s(pub2)} s vs ${s(rc2)} s${below(ratio2, 10) ? `; below 10× in ${below(ratio2, 10)} of ${ratio2.length} runs` : ''}`,
      met: ratio2Median === null ? null : ratio2Median >= 10,
    },
    {
      what: 'first publish vs `rclone sync` (median of the per-run ratios)',
      target: 'no slower',
      measured:
        ratio1Median === null
          ? 'rclone not installed'
          : `${fmtRatios(ratio1)} over ${runsText}; ${s(pub1)} s vs ${s(rc1)} s${below(ratio1, 1) ? `; publish slower in ${below(ratio1, 1)} of ${ratio1.length} runs` : ''}`,
      met: ratio1Median === null ? null : ratio1Median >= 1,
    },
  ];
  const secs = (n: number | null) => (n === null ? '–' : n.toFixed(1));
  const perRun = runs.map((r) => [
    String(r.run),
    r.publishFirst ? 'publish, rclone' : 'rclone, publish',
    r.load.toFixed(2),
    r.first.seconds.toFixed(1),
    secs(r.rcloneFirst),
    r.rcloneFirst === null ? '–' : ratio(r.rcloneFirst / r.first.seconds),
    r.second.seconds.toFixed(1),
    secs(r.rcloneSecond),
    r.rcloneSecond === null ? '–' : ratio(r.rcloneSecond / r.second.seconds),
  ]);
  const notes: string[] = [];
  notes.push(
    `Scale: every figure of this section is from the ${scale}-scale release (${fmt(files)} files, ${fmt(change.isoforms)} isoforms); the scale is chosen with \`--publish-scale demo|human\` (human: the tree the build section made in the same run, or \`--human-tree\`).`,
    `The machine is a shared 2-core box on which other work (builds and test runs in other worktrees) ran during the measurements; the load average when each run started is in the per-run table. The tools took turns going first on new buckets, so that load weighs on both alike; it is part of the spread over runs. \`publish()\` runs in the bench's own Node process, rclone in a process of its own.`,
    `rclone (${rcloneVersion ?? 'not installed'}) runs with \`${RCLONE_FLAGS.join(' ')}\`, as its S3 documentation advises: \`--fast-list\` reads the bucket's listing with one request per 1,000 objects instead of one listing per directory (${RCLONE_DOCS.fastList}); \`--checksum\` compares size and MD5 (the listing's ETag) instead of modification times, which on S3 cost a HEAD per object, and the same page says to use these flags with \`--fast-list\` (${RCLONE_DOCS.checksum}; ${RCLONE_DOCS.flags}: "Check for changes with size & checksum"); \`--s3-no-head\` skips the HEAD rclone sends after every upload to check it, at the price of a higher chance of an undetected failed upload (${RCLONE_DOCS.noHead}). Both tools have ${PARALLEL} requests in flight (\`--transfers\`, \`--checkers\`); rclone makes one attempt (\`--retries 1\`).`,
  );
  if (listing) {
    const gone = listing.missing.filter((m) => m.foundWithoutDelimiter);
    notes.push(
      gone.length
        ? `s3rver's folder-style listing (checked on rclone's bucket after run 1): a root listing with delimiter "/" named ${listing.listed.map((l) => `\`${l}\``).join(', ') || 'nothing'}, leaving out ${gone.map((m) => `\`${m.name}\` (${fmt(m.files)} of the ${fmt(files)} files)`).join(', ')}, whose objects a listing of that prefix without a delimiter does find. s3rver's store walks one directory below the prefix and names a common prefix only for an object it meets there; \`api/\` holds nothing but \`api/v1/…\`. rclone without \`--fast-list\` lists folder by folder, so it finds no \`api/\` in the bucket and uploads it whole on every sync: that, not rclone, made the earlier comparison's "1% change" as slow as a full upload.`
        : `s3rver's folder-style listing (checked on rclone's bucket after run 1): a root listing with delimiter "/" named every top-level entry of the tree (${listing.listed.length}); the missing-prefix behaviour was not seen in this run.`,
      `s3rver's listing without a delimiter (as \`--fast-list\` reads it, ${fmt(listing.flat.files)} files in the bucket): ${fmt(listing.flat.keys)} keys returned over ${listing.flat.pages} pages, ${fmt(listing.flat.distinct)} distinct` +
        (listing.flat.keys > listing.flat.distinct
          ? `; ${fmt(listing.flat.keys - listing.flat.distinct)} keys came twice, ${fmt(listing.flat.repeatsAtPageStart)} of them at the start of a page that repeated the previous page's last keys. rclone logs such keys as "Duplicate object found in destination - ignoring".`
          : '.'),
    );
  }
  const [fresh, rewrite] = putHead!.passes;
  const shortHeads = fresh.shortHeads + rewrite.shortHeads;
  const shortFiles = fresh.shortFiles + rewrite.shortFiles;
  const sizesSeen = [...new Set([...fresh.sizesSeen, ...rewrite.sizesSeen])].sort((x, y) => x - y);
  const plural = (n: number, one: string, many: string) => `${fmt(n)} ${n === 1 ? one : many}`;
  const seenText =
    shortHeads > 0
      ? `A HEAD sent at once saw a short object (sizes seen: ${sizesSeen.join(', ')}), and the full size was there at most ${Math.ceil(Math.max(...putHead!.passes.map((p) => p.msUntilFullMax)))} ms after the answer: the earlier run's "corrupted on transfer: sizes differ N vs 0" errors are this, seen by rclone's HEAD after upload, not a matter of modification times.`
      : shortFiles > 0
        ? "No HEAD saw a short object here, but the object's file was short at the moment of the answer, so the window is there; the earlier run's \"corrupted on transfer: sizes differ N vs 0\" errors came from the check that can fall into it, rclone's HEAD after upload, not from modification times."
        : 'This probe saw no short object, so the window is narrow at this load; the earlier run\'s "corrupted on transfer: sizes differ N vs 0" errors came from the check that can fall into it, rclone\'s HEAD after upload, not from modification times.';
  notes.push(
    `s3rver and HEAD after PUT (probe on a server of its own after the timed runs): ${fmt(putHead!.puts)} tree files PUT with ${putHead!.concurrency} in flight, each followed at once by a HEAD, then the same keys PUT again (rewritten). ` +
      `New keys: ${plural(fresh.shortHeads, 'HEAD', 'HEADs')} saw another size than was sent, ${plural(fresh.shortFiles, 'object file was', 'object files were')} short on s3rver's disk the moment the PUT was answered; ` +
      `rewritten keys: ${plural(rewrite.shortHeads, 'HEAD', 'HEADs')}, ${plural(rewrite.shortFiles, 'file', 'files')} short on disk; once all PUTs were done, ${plural(putHead!.shortAfterwards, 'object was', 'objects were')} short. ` +
      "s3rver's filesystem store answers a PUT once the body has passed its MD5 hash, while its file stream may still be writing the bytes (a rewrite opens the file truncated), and a HEAD reports the file's size on disk. " +
      `${seenText} With \`--s3-no-head\` rclone does not make that check; \`publish()\` sends no HEAD after a PUT.`,
  );
  notes.push(
    ...rcloneFailures.map(
      (f) => `rclone's single attempt ended with errors (${f}); its time is counted as if it had succeeded.`,
    ),
    "publish knows what the store holds from release 1's manifest, reading only the manifest shards release 2 changed (no listing, no request per object); those reads are most of a 1% publish. rclone with `--fast-list --checksum` lists the whole bucket and hashes every local file on each sync, which is most of its time for a 1% change (s3rver lists slowly: its listing stats every object file and reads its metadata).",
    "At a 1% change nearly every manifest shard changes (each lists about 1,000 files), so most of release 2's bytes are its manifest.",
    's3rver stores each object as files on a local disk; S3 from outside AWS is slower per request, which favours the tool making fewer requests.',
  );
  return {
    id: 'publish',
    title: '4. Publishing and mirroring (s3rver, beside rclone)',
    method:
      `The ${scale}-scale release (${fmt(files)} files) on s3rver with conditional writes (bin/local-s3.cjs, which publish requires; rclone sends none) in its own process on loopback. ${runs.length} runs; each starts a new s3rver with a new bucket for each tool, and the tools take turns going first (run 1 publish then rclone, run 2 rclone then publish, …). ` +
      `In each run: release 1 uploaded in full by \`publish()\` (build/publish/publish.ts) and by \`rclone sync\` (Debian's rclone, \`${RCLONE_FLAGS.join(' ')}\`, one attempt) into its own bucket; then release 2, a copy of the release DB with the expression (TPM) of every 100th isoform changed ` +
      `(${change.changed} of ${fmt(change.isoforms)}), rendered once for all runs, published and \`rclone sync\`ed over release 1 the same way. In run 1 only, \`mirror()\` from s3:// into an empty directory after release 1 and again after release 2. ` +
      "Figures are each tool's own wall time; object counts are `publish()`'s and `mirror()`'s summaries; a ratio is rclone's time over publish's in the same run.",
    tables: [
      {
        caption: `**Per run** (seconds; ratio = rclone ÷ publish).`,
        headers: [
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
        rows: perRun,
      },
      {
        caption: `**Summary**: median (min–max) over ${runs.length} runs; the mirror from run 1 only.`,
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
            `${fmt(first.bytesUploaded)} (${mib(first.bytesUploaded).toFixed(1)} MiB)`,
            s(pub1),
            rc1.length ? s(rc1) : '–',
            ratio1.length ? fmtRatios(ratio1) : '–',
          ],
          [
            'release 2 (1% of isoforms changed)',
            fmt(second.objects),
            fmt(second.uploaded),
            fmt(second.bytesUploaded),
            s(pub2),
            rc2.length ? s(rc2) : '–',
            ratio2.length ? fmtRatios(ratio2) : '–',
          ],
          [
            'mirror, first sync (release 1)',
            fmt(mirrored!.fetched + mirrored!.reused),
            fmt(mirrored!.fetched),
            fmt(mirrored!.bytes),
            mirrored!.seconds.toFixed(1),
            '–',
            '–',
          ],
          [
            'mirror, re-sync (release 2, release 1 kept)',
            // What the releases list, not what the sync looked at: it reads only shards that changed.
            fmt(second.objects),
            fmt(resynced!.fetched),
            fmt(resynced!.bytes),
            resynced!.seconds.toFixed(1),
            '–',
            '–',
          ],
        ],
      },
    ],
    targets,
    notes,
    headline: `${scale} scale, ${runs.length} runs: first publish ${ratio1.length ? `${fmtRatios(ratio1)} of rclone's speed` : s(pub1) + ' s'}, 1% change ${ratio2.length ? `${fmtRatios(ratio2)} faster than rclone` : `${s(pub2)} s`}`,
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
