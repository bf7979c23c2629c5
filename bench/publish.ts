// Section 4: incremental publish against s3rver (a real S3-protocol server): the demo release in full,
// then a release with 1% of isoforms changed, which should upload about 1% of the objects.
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { copyFileSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import fg from 'fast-glob';
import { publish, rollback, s3Client, type PublishSummary } from '../build/publish.js';
import { renderTree } from '../build/render/index.js';
import { startS3rver } from './s3rver.js';
import type { BenchContext } from './context.js';
import type { SectionReport } from './report.js';
import { fmt, fmtSummary, mib, summarize } from './stats.js';

const BUCKET = 'isoatlas-bench';

/** sha256 of every file of a tree, by path. */
async function fileHashes(tree: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for (const path of await fg('**/*', { cwd: tree, onlyFiles: true, dot: true })) {
    out.set(path, createHash('sha256').update(readFileSync(join(tree, path))).digest('hex'));
  }
  return out;
}

/** A copy of the release database with a new release name and 1% of isoforms' expression changed. */
function changedRelease(baseDb: string, file: string, run: number): { release: string; isoforms: number; changed: number } {
  copyFileSync(baseDb, file);
  const db = new Database(file);
  try {
    const release = `${(db.prepare("SELECT value FROM release_meta WHERE key = 'release'").get() as { value: string }).value}-bench${run + 1}`;
    db.prepare("UPDATE release_meta SET value = ? WHERE key = 'release'").run(release);
    const isoforms = (db.prepare('SELECT count(*) AS n FROM isoforms').get() as { n: number }).n;
    // Every 100th isoform (by rowid): a spread-out 1%, as a re-quantified sample would touch.
    const changed = db.prepare('UPDATE isoforms SET expression_tpm = coalesce(expression_tpm, 0) + ? WHERE rowid % 100 = 0').run(run + 1).changes;
    return { release, isoforms, changed };
  } finally {
    db.close();
  }
}

const r0Differing = (runs: { differing: [string, number][] }[]) => runs[0].differing;

export async function benchPublish(ctx: BenchContext): Promise<SectionReport> {
  const demo = await ctx.demo();
  const s3rver = await startS3rver(join(ctx.tmp, 's3rver'), [BUCKET]);
  const s3 = s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' });
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const base = await fileHashes(demo.tree);
  const runs: { summary: PublishSummary; differing: [string, number][]; isoforms: number; changed: number }[] = [];
  let first: PublishSummary;
  try {
    ctx.log('  publishing release 1 (the demo tree) in full…');
    first = await publish({ dir: demo.tree, bucket: BUCKET, s3, progress: false });
    ctx.log(`  release 1: ${fmt(first.uploaded)} objects uploaded, ${mib(first.bytesUploaded).toFixed(1)} MiB in ${first.seconds.toFixed(1)} s`);
    for (let run = 0; run < ctx.opts.runsPublish; run++) {
      const db = join(ctx.tmp, `publish-${run}.sqlite`);
      const tree = join(ctx.tmp, `publish-${run}-tree`);
      const change = changedRelease(demo.db, db, run);
      await renderTree(db, tree, { progress: false });
      const hashes = await fileHashes(tree);
      const differing = [...hashes].filter(([path, sha]) => base.get(path) !== sha).map(([path]): [string, number] => [path, statSync(join(tree, path)).size]);
      const summary = await publish({ dir: tree, bucket: BUCKET, s3, progress: false });
      runs.push({ summary, differing, ...change });
      ctx.log(`  run ${run + 1}/${ctx.opts.runsPublish}: ${change.changed} isoforms changed → ${differing.length} files differ; uploaded ${summary.uploaded}, already present ${summary.present}, ${fmt(summary.bytesUploaded)} bytes in ${summary.seconds.toFixed(1)} s`);
      // Back to release 1, so every run publishes against the same previous release.
      await rollback({ s3, bucket: BUCKET, to: first.release });
    }
  } finally {
    s3.destroy();
    await s3rver.stop();
  }
  const total = first.objects;
  const up = summarize(runs.map((r) => r.summary.uploaded));
  const cp = summarize(runs.map((r) => r.summary.present));
  const bytes = summarize(runs.map((r) => r.summary.bytesUploaded));
  const secs = summarize(runs.map((r) => r.summary.seconds));
  const diff = summarize(runs.map((r) => r.differing.length));
  const largest = [...r0Differing(runs)].sort((a, b) => b[1] - a[1]).slice(0, 5);
  const r0 = runs[0];
  const share = (100 * up.median) / total;
  return {
    id: 'publish',
    title: '4. Incremental publish (s3rver)',
    method: `s3rver in its own process on loopback; \`publish()\` (build/publish.ts, 16 requests in flight) of the demo tree as release 1, then ${ctx.opts.runsPublish} run(s) of: copy the release DB, rename the release, add to the expression (TPM) of every 100th isoform (${r0.changed} of ${fmt(r0.isoforms)}), \`renderTree\`, publish as release 2, roll back to release 1. Figures are \`publish()\`'s own summary; “files that differ” is counted by hashing both trees.`,
    tables: [
      {
        headers: ['publish', 'runs', 'objects uploaded', 'already in the store', 'bytes uploaded', 'seconds'],
        rows: [
          ['release 1 (full)', '1', fmt(first.uploaded), fmt(first.present), `${fmt(first.bytesUploaded)} (${mib(first.bytesUploaded).toFixed(1)} MiB)`, first.seconds.toFixed(1)],
          ['release 2 (1% of isoforms changed)', String(runs.length), fmtSummary(up), fmtSummary(cp), fmtSummary(bytes), fmtSummary(secs, 1)],
        ],
      },
    ],
    targets: [],
    notes: [
      `Largest of them: ${largest.map(([path, size]) => `\`${path}\` ${fmt(size)} B`).join(', ')}.`,
      'Object counts are deterministic for a given change; the seconds are s3rver on loopback (CopyObject is a file copy there), not S3.',
      `Files of release 2 that differ from release 1 (or are new): ${fmtSummary(diff)} of ${fmt(total)}; uploaded ${share.toFixed(2)}% of the objects and ${((100 * bytes.median) / first.bytesUploaded).toFixed(2)}% of the bytes of a full publish.`,
    ],
    headline: `1% change uploads ${fmt(up.median)} of ${fmt(total)} objects`,
  };
}
