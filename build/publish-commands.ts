// `isoatlas publish` and `isoatlas rollback`.
import type { Command } from 'commander';
import { UsageError } from './errors.js';

function parseKeep(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError('--keep takes a whole number ≥ 1');
  return Number(value);
}

export function addPublishCommands(parent: Command, log: (line: string) => void): void {
  parent
    .command('publish')
    .description('Upload a rendered tree to S3 as a new release (only what changed), verify it, then switch current.json to it.')
    .requiredOption('--dir <tree>', 'rendered tree (with manifest.json)')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style)')
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option('--distribution-id <id>', 'CloudFront distribution whose cached API answers to invalidate')
    .option('--keep <n>', 'keep the newest n releases, delete older ones after the switch', parseKeep)
    .option('--concurrency <n>', 'uploads in flight', (v) => Number(v), 16)
    .action(async (o: { dir: string; bucket: string; prefix: string; endpoint?: string; region: string; distributionId?: string; keep?: number; concurrency: number }) => {
      const { publish, s3Client } = await import('./publish.js');
      const { CloudFrontClient } = await import('@aws-sdk/client-cloudfront');
      const s = await publish({
        dir: o.dir,
        bucket: o.bucket,
        prefix: o.prefix,
        keep: o.keep,
        concurrency: o.concurrency,
        distributionId: o.distributionId,
        s3: s3Client(o),
        cloudfront: o.distributionId ? new CloudFrontClient({ region: 'us-east-1' }) : undefined,
        log,
      });
      log(
        `published release ${s.release}${s.previous ? ` (was ${s.previous})` : ''}: ${s.uploaded} uploaded, ${s.copied} copied from the previous release, ${s.skipped} already there; ` +
          `${(s.bytesUploaded / 1e6).toFixed(2)} MB in ${s.seconds.toFixed(1)} s${s.pruned.length ? `; pruned ${s.pruned.join(', ')}` : ''}${s.invalidated.length ? `; invalidated ${s.invalidated.join(' ')}` : ''}`,
      );
    });

  parent
    .command('rollback')
    .description('Point current.json back at the release published before the current one (or --to a given one).')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--to <release>', 'release to switch to')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style)')
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .action(async (o: { bucket: string; prefix: string; to?: string; endpoint?: string; region: string }) => {
      const { rollback, s3Client } = await import('./publish.js');
      const r = await rollback({ s3: s3Client(o), bucket: o.bucket, prefix: o.prefix, to: o.to });
      log(`rolled back s3://${o.bucket}/${o.prefix}: ${r.from} → ${r.to}`);
    });
}
