// `isoatlas publish` and `isoatlas rollback`.
import { parseEndpoint } from './storage-errors.js';
import type { Command } from 'commander';
import { UsageError } from './errors.js';
import { KVS_ARN } from '../edge/cloudfront/kvs-layout.js';

/** `--kvs <arn>` as a client and the ARN; a UsageError for anything but a KeyValueStore ARN. */
async function kvsOption(o: { kvs?: string; kvsEndpoint?: string }) {
  if (!o.kvs) return undefined;
  if (!KVS_ARN.test(o.kvs)) throw new UsageError(`--kvs must be a KeyValueStore ARN like arn:aws:cloudfront::123456789012:key-value-store/<id>, not "${o.kvs}"`);
  const { kvsClient } = await import('./keys/commands.js');
  return { client: await kvsClient(o.kvsEndpoint), arn: o.kvs };
}

function parseKeep(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError('--keep takes a whole number ≥ 1');
  return Number(value);
}

export function addPublishCommands(parent: Command, log: (line: string) => void): void {
  parent
    .command('publish')
    .description('Upload a rendered tree to S3 as a new release (only objects the store lacks), record it in releases.json, then switch current.json to it.')
    .requiredOption('--dir <tree>', 'rendered tree (with manifest.json)')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option('--kvs <arn>', "the CDN's KeyValueStore (stack output KeyValueStoreArn): name the new release there, so CloudFront switches at once")
    .option('--kvs-endpoint <url>', 'KeyValueStore API endpoint, for a local stand-in')
    .option('--distribution-id <id>', 'CloudFront distribution whose cached API answers to invalidate (not needed with --kvs)')
    .option('--keep <n>', 'keep the newest n releases; older ones are retired (isoatlas gc deletes their objects after a grace period)', parseKeep)
    .option('--concurrency <n>', 'uploads in flight', (v) => Number(v), 16)
    .action(async (o: { dir: string; bucket: string; prefix: string; endpoint?: string; region: string; distributionId?: string; keep?: number; concurrency: number; kvs?: string; kvsEndpoint?: string }) => {
      const { publish, s3Client } = await import('./publish.js');
      const kvs = await kvsOption(o);
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
        kvs,
        log,
      });
      log(
        `published release ${s.release}${s.previous ? ` (was ${s.previous})` : ''}: ${s.objects} objects, ${s.uploaded} uploaded, ${s.present} already in the store; ` +
          `${(s.bytesUploaded / 1e6).toFixed(2)} MB in ${s.seconds.toFixed(1)} s${s.retired.length ? `; retired ${s.retired.join(', ')}` : ''}${s.invalidated.length ? `; invalidated ${s.invalidated.join(' ')}` : ''}`,
      );
    });

  parent
    .command('rollback')
    .description('Point current.json back at the release published before the current one (or --to a given one).')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--to <release>', 'release to switch to')
    .option('--kvs <arn>', "the CDN's KeyValueStore: name the release there too")
    .option('--kvs-endpoint <url>', 'KeyValueStore API endpoint, for a local stand-in')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .action(async (o: { bucket: string; prefix: string; to?: string; endpoint?: string; region: string; kvs?: string; kvsEndpoint?: string }) => {
      const { rollback, s3Client } = await import('./publish.js');
      const r = await rollback({ s3: s3Client(o), bucket: o.bucket, prefix: o.prefix, to: o.to, kvs: await kvsOption(o) });
      log(r.changed ? `rolled back s3://${o.bucket}/${o.prefix}: ${r.from} → ${r.to}` : `${r.to} is already the current release of s3://${o.bucket}/${o.prefix}: nothing to do`);
    });

  parent
    .command('releases')
    .description('List the releases published in a bucket: kept (the current one marked), being published, retired.')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option('--json', 'print the listing as JSON')
    .action(async (o: { bucket: string; prefix: string; endpoint?: string; region: string; json?: boolean }) => {
      const { listReleases, s3Client } = await import('./publish.js');
      const l = await listReleases({ s3: s3Client(o), bucket: o.bucket, prefix: o.prefix });
      if (o.json) return void process.stdout.write(`${JSON.stringify(l, null, 2)}\n`);
      if (!l.releases.length && !l.pending.length) return log(`nothing is published at s3://${o.bucket}/${o.prefix}`);
      for (const r of l.releases) process.stdout.write(`${r.current ? '*' : ' '} ${r.release}  published ${r.published_at}  manifest ${r.manifest_sha256.slice(0, 12)}\n`);
      for (const r of l.pending) process.stdout.write(`  ${r.release}  being published since ${r.started_at} (or interrupted: run publish again)\n`);
      for (const r of l.retired) process.stdout.write(`  ${r.release}  retired ${r.retired_at}\n`);
    });

  parent
    .command('gc')
    .description('Delete objects no kept, pending or recently retired release references, once older than the grace period.')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--grace-hours <h>', 'only delete objects unreferenced and older than this; longer than every cache lifetime', (v) => Number(v), 48)
    .option('--dry-run', 'count what would be deleted, delete nothing')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .action(async (o: { bucket: string; prefix: string; graceHours: number; dryRun?: boolean; endpoint?: string; region: string }) => {
      const { collectGarbage } = await import('./collect.js');
      const { s3Client } = await import('./publish.js');
      const s = await collectGarbage({ s3: s3Client(o), bucket: o.bucket, prefix: o.prefix, graceHours: o.graceHours, dryRun: o.dryRun, log });
      log(
        `${o.dryRun ? 'would delete' : 'deleted'} ${s.deleted} objects (${(s.bytesDeleted / 1e6).toFixed(2)} MB) of s3://${o.bucket}/${o.prefix}; ${s.referenced} referenced, ${s.young} unreferenced but younger than ${o.graceHours} h` +
          (s.dropped.length ? `; dropped ${s.dropped.join(', ')} from the history` : ''),
      );
    });
}
