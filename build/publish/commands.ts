// `isoatlas publish` and `isoatlas rollback`.
import { parseEndpoint } from '../common/storage-errors.js';
import type { Command } from 'commander';
import { UsageError } from '../common/errors.js';
import { nonNegativeNumber, positiveInteger } from '../common/cli-options.js';
import { KVS_ARN } from '../../edge/cloudfront/kvs-layout.js';
import { DEFAULT_GRACE_HOURS, SAFE_GRACE_HOURS } from './grace.js';
import { log as processLog } from '../../edge/server/logger.js';

type KvsOptions = { kvs?: string; replaceKvs?: string; kvsEndpoint?: string };

const checkArn = (option: string, value: string | undefined) => {
  if (value !== undefined && !KVS_ARN.test(value))
    throw new UsageError(
      `${option} must be a KeyValueStore ARN like arn:aws:cloudfront::123456789012:key-value-store/<id>, not "${value}"`,
    );
};

/** How the command reaches the CDN's KeyValueStore: always a client, since a store may record one
 * (edge.json) that the command must use whether --kvs is given or not. */
async function kvsAccess(o: KvsOptions) {
  checkArn('--kvs', o.kvs);
  checkArn('--replace-kvs', o.replaceKvs);
  const { kvsClient } = await import('../keys/commands.js');
  return { client: await kvsClient(o.kvsEndpoint), arn: o.kvs, replaces: o.replaceKvs, endpoint: o.kvsEndpoint };
}

const KVS_HELP =
  "the CDN's KeyValueStore (stack output KeyValueStoreArn). Needed once: the store records it (edge.json), and later commands use it without --kvs";
const REPLACE_KVS_HELP = 'the KeyValueStore the store records, to replace it with --kvs on purpose (a new stack)';
const KVS_ENDPOINT_HELP = 'KeyValueStore API endpoint, for a local stand-in';
const SINGLE_WRITER_HELP =
  'run on a server that ignores conditional writes (If-Match, If-None-Match), which is otherwise refused: only safe when no other publish, rollback or gc can run on this store meanwhile';

function parseKeep(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) < 1) throw new UsageError('--keep takes a whole number ≥ 1');
  return Number(value);
}

export function addPublishCommands(parent: Command, log: (line: string) => void): void {
  parent
    .command('publish')
    .description(
      'Upload a rendered tree to S3 as a new release (only objects the store lacks), record it in releases.json, then switch current.json to it.',
    )
    .requiredOption('--dir <tree>', 'rendered tree (with manifest.json)')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option('--kvs <arn>', `${KVS_HELP}: the new release is named there, so CloudFront switches at once`)
    .option('--replace-kvs <arn>', REPLACE_KVS_HELP)
    .option('--kvs-endpoint <url>', KVS_ENDPOINT_HELP)
    .option(
      '--distribution-id <id>',
      'CloudFront distribution whose cached API answers to invalidate (not needed with a KeyValueStore)',
    )
    .option(
      '--keep <n>',
      'keep the newest n releases; older ones are retired (isoatlas gc deletes their objects after a grace period)',
      parseKeep,
    )
    .option('--concurrency <n>', 'uploads in flight', positiveInteger, 16)
    .option('--unsafe-single-writer', SINGLE_WRITER_HELP)
    .action(
      async (
        o: {
          dir: string;
          bucket: string;
          prefix: string;
          endpoint?: string;
          region: string;
          distributionId?: string;
          keep?: number;
          concurrency: number;
          unsafeSingleWriter?: boolean;
        } & KvsOptions,
      ) => {
        const { publish, s3Client } = await import('./publish.js');
        const kvs = await kvsAccess(o);
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
          debug: (line) => processLog.debug(line),
          unsafeSingleWriter: o.unsafeSingleWriter,
        });
        log(
          `published release ${s.release}${s.previous ? ` (was ${s.previous})` : ''}: ${s.objects} objects, ${s.uploaded} uploaded, ${s.present} already in the store; ` +
            `${(s.bytesUploaded / 1e6).toFixed(2)} MB, and ${s.packs} pack${s.packs === 1 ? '' : 's'} of ${(s.packBytes / 1e6).toFixed(2)} MB, in ${s.seconds.toFixed(1)} s${s.retired.length ? `; retired ${s.retired.join(', ')}` : ''}${s.invalidated.length ? `; invalidated ${s.invalidated.join(' ')}` : ''}`,
        );
      },
    );

  parent
    .command('rollback')
    .description(
      'Point current.json back at the release published before the current one (run again to go back further), or --to a given one.',
    )
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--to <release>', 'release to switch to')
    .option('--kvs <arn>', `${KVS_HELP}: the release is named there too`)
    .option('--replace-kvs <arn>', REPLACE_KVS_HELP)
    .option('--kvs-endpoint <url>', KVS_ENDPOINT_HELP)
    .option(
      '--distribution-id <id>',
      'CloudFront distribution whose cached API answers to invalidate (not needed with a KeyValueStore)',
    )
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option('--unsafe-single-writer', SINGLE_WRITER_HELP)
    .action(
      async (
        o: {
          bucket: string;
          prefix: string;
          to?: string;
          endpoint?: string;
          region: string;
          distributionId?: string;
          unsafeSingleWriter?: boolean;
        } & KvsOptions,
      ) => {
        const { rollback, s3Client } = await import('./publish.js');
        const { CloudFrontClient } = await import('@aws-sdk/client-cloudfront');
        const r = await rollback({
          s3: s3Client(o),
          bucket: o.bucket,
          prefix: o.prefix,
          to: o.to,
          kvs: await kvsAccess(o),
          distributionId: o.distributionId,
          cloudfront: o.distributionId ? new CloudFrontClient({ region: 'us-east-1' }) : undefined,
          log,
          unsafeSingleWriter: o.unsafeSingleWriter,
        });
        const invalidated = r.invalidated.length ? `; invalidated ${r.invalidated.join(' ')}` : '';
        const where = `s3://${o.bucket}/${o.prefix}`;
        if (!r.changed) log(`${r.to} is already the current release of ${where}: nothing to do`);
        else if (r.from === r.to)
          log(`${r.to} was already the current release of ${where}; the CDN's pin now names it too${invalidated}`);
        else log(`rolled back ${where}: ${r.from} → ${r.to}${invalidated}`);
      },
    );

  parent
    .command('releases')
    .description('List the releases published in a bucket: kept (the current one marked), being published, retired.')
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .option('--json', 'print the listing as JSON')
    .option('--kvs-endpoint <url>', KVS_ENDPOINT_HELP)
    .action(
      async (o: { bucket: string; prefix: string; endpoint?: string; region: string; json?: boolean } & KvsOptions) => {
        const { listReleases, s3Client } = await import('./publish.js');
        const l = await listReleases({ s3: s3Client(o), bucket: o.bucket, prefix: o.prefix, kvs: await kvsAccess(o) });
        if (o.json) return void process.stdout.write(`${JSON.stringify(l, null, 2)}\n`);
        if (!l.releases.length && !l.pending.length) return log(`nothing is published at s3://${o.bucket}/${o.prefix}`);
        for (const r of l.releases)
          process.stdout.write(
            `${r.current ? '*' : ' '} ${r.release}  published ${r.published_at}  manifest ${r.manifest_sha256.slice(0, 12)}${r.release === l.pin?.release ? '  pinned at the CDN' : ''}\n`,
          );
        for (const r of l.pending)
          process.stdout.write(
            `  ${r.release}  being published since ${r.started_at} (or interrupted: run publish again)\n`,
          );
        for (const r of l.retired)
          process.stdout.write(
            `  ${r.release}  retired ${r.retired_at}${r.release === l.pin?.release ? '  pinned at the CDN' : ''}\n`,
          );
        if (l.pin) process.stdout.write(`${pinLine(l.current, l.pin)}\n`);
      },
    );

  parent
    .command('gc')
    .description(
      'Delete objects no kept, pending or recently retired release references, once older than the grace period.',
    )
    .requiredOption('--bucket <name>', 'S3 bucket')
    .option('--prefix <prefix>', 'key prefix of the atlas in the bucket', '')
    .option(
      '--grace-hours <h>',
      `only delete objects unreferenced and older than this; longer than every cache lifetime (below ${SAFE_GRACE_HOURS} only with --force)`,
      nonNegativeNumber,
      DEFAULT_GRACE_HOURS,
    )
    .option(
      '--force',
      `accept a --grace-hours below ${SAFE_GRACE_HOURS}: only when no publish or rollback is running and no cached answer points into recently retired releases`,
    )
    .option('--unsafe-single-writer', SINGLE_WRITER_HELP)
    .option('--kvs-endpoint <url>', `${KVS_ENDPOINT_HELP} (the KeyValueStore is the one the store records)`)
    .option('--dry-run', 'count what would be deleted, delete nothing')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style), e.g. http://127.0.0.1:9000', parseEndpoint)
    .option('--region <region>', 'AWS region', process.env.AWS_REGION ?? 'us-east-1')
    .action(
      async (
        o: {
          bucket: string;
          prefix: string;
          graceHours: number;
          dryRun?: boolean;
          endpoint?: string;
          region: string;
          force?: boolean;
          unsafeSingleWriter?: boolean;
        } & KvsOptions,
      ) => {
        const { collectGarbage } = await import('./collect.js');
        const { s3Client } = await import('./publish.js');
        const s = await collectGarbage({
          s3: s3Client(o),
          bucket: o.bucket,
          prefix: o.prefix,
          graceHours: o.graceHours,
          dryRun: o.dryRun,
          log,
          kvs: await kvsAccess(o),
          force: o.force,
          unsafeSingleWriter: o.unsafeSingleWriter,
        });
        log(
          `${o.dryRun ? 'would delete' : 'deleted'} ${s.deleted} objects (${(s.bytesDeleted / 1e6).toFixed(2)} MB) and ${s.packs.deleted} packs (${(s.packs.bytesDeleted / 1e6).toFixed(2)} MB) of s3://${o.bucket}/${o.prefix}; ${s.referenced} objects and ${s.packs.referenced} packs referenced, ${s.young + s.packs.young} unreferenced but younger than ${o.graceHours} h` +
            (s.dropped.length ? `; dropped ${s.dropped.join(', ')} from the history` : '') +
            (s.pinned ? `; kept ${s.pinned}, pinned at the CDN` : ''),
        );
      },
    );
}

/** The CDN's pin as `releases` shows it, saying so when it and the pointer name different releases. */
function pinLine(current: string | null, pin: { kvs: string; release: string | null; error?: string }): string {
  if (pin.error) return `pin: cannot read ${pin.kvs}: ${pin.error}`;
  if (pin.release === null)
    return `pin: ${pin.kvs} names no release: the CDN answers from current.json's (${current ?? 'none'}); \`isoatlas rollback --to ${current ?? '<release>'}\` sets it`;
  if (pin.release === current) return `pin: ${pin.kvs} → ${pin.release}, as current.json`;
  return (
    `pin: ${pin.kvs} → ${pin.release}, but current.json names ${current ?? 'none'}: the CDN answers API requests from ${pin.release}. ` +
    `\`isoatlas rollback --to ${current ?? '<release>'}\` pins the pointer's release (or --to ${pin.release} points current.json at the pinned one)`
  );
}
