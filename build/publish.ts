// `isoatlas publish`: a rendered tree → its own prefix in the bucket (releases/<release>/…), verified,
// then the pointer (current.json) switched in one PUT. Readers (the edge pins a release per request)
// see the old release or the new one, never a mix.
//
// Incremental: a file whose content the previous release already has is copied inside the bucket
// (CopyObject: no upload), so a release changing 1% of records uploads about 1% of the objects.
// Resumable: objects already under the new prefix with the right content (ETag = MD5 of a
// single-part upload) are skipped, so re-running an interrupted publish finishes the job and ends in
// the state an uninterrupted run would have reached.
import {
  CopyObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  S3Client,
} from '@aws-sdk/client-s3';
import { CloudFrontClient, CreateInvalidationCommand } from '@aws-sdk/client-cloudfront';
import { createHash } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { POINTER_KEY, parsePointer, releaseKeyPrefix, type ReleasePointer } from '../edge/contract/bucket.js';
import { contentTypeOf, treePaths } from '../edge/contract/tree.js';
import { startProgress } from './progress.js';
import { UsageError } from './errors.js';
import { loadManifest } from './manifest-reader.js';
import { forEachLimited } from './concurrency.js';

/** Release files never change under their versioned key; the pointer and history must stay fresh. */
export const RELEASE_CACHE_CONTROL = 'public, max-age=31536000, immutable';
export const POINTER_CACHE_CONTROL = 'public, max-age=10, must-revalidate';
/** The order releases were published in, for --keep and rollback. */
export const HISTORY_KEY = 'releases.json';


export interface PublishOptions {
  dir: string;
  bucket: string;
  prefix?: string;
  keep?: number;
  concurrency?: number;
  distributionId?: string;
  s3: S3Client;
  cloudfront?: Pick<CloudFrontClient, 'send'>;
  progress?: boolean;
  log?: (line: string) => void;
}

export interface PublishSummary {
  release: string;
  previous: string | null;
  uploaded: number;
  copied: number;
  skipped: number;
  bytesUploaded: number;
  seconds: number;
  pruned: string[];
  invalidated: string[];
}

/** An S3 client for real AWS, or for an S3-compatible endpoint (path-style, as local servers need). */
export function s3Client(opts: { region?: string; endpoint?: string }): S3Client {
  return new S3Client({
    region: opts.region ?? process.env.AWS_REGION ?? 'us-east-1',
    endpoint: opts.endpoint,
    forcePathStyle: Boolean(opts.endpoint),
    // Plain Content-MD5 integrity instead of the SDK's newer trailing checksums, which older
    // S3-compatible servers do not understand.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  });
}

const normalizePrefix = (prefix = '') => (prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`);

async function getText(s3: S3Client, bucket: string, key: string): Promise<string | null> {
  try {
    const out = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    return await out.Body!.transformToString();
  } catch (err) {
    if ((err as Error).name === 'NoSuchKey' || (err as Error).name === 'NotFound') return null;
    throw err;
  }
}

/** Every object under a prefix: key (relative to the prefix) → ETag without quotes. */
async function listEtags(s3: S3Client, bucket: string, prefix: string): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  let token: string | undefined;
  do {
    const page = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }));
    for (const o of page.Contents ?? []) out.set(o.Key!.slice(prefix.length), (o.ETag ?? '').replace(/"/g, ''));
    token = page.IsTruncated ? page.NextContinuationToken : undefined;
  } while (token);
  return out;
}

async function headEtag(s3: S3Client, bucket: string, key: string): Promise<string | null> {
  try {
    return ((await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }))).ETag ?? '').replace(/"/g, '');
  } catch {
    return null;
  }
}


export async function publish(opts: PublishOptions): Promise<PublishSummary> {
  const started = performance.now();
  const log = opts.log ?? (() => {});
  const { s3, bucket } = opts;
  const prefix = normalizePrefix(opts.prefix);
  if (!existsSync(join(opts.dir, treePaths.manifest))) {
    throw new UsageError(`${opts.dir} is not a rendered isoatlas tree (no ${treePaths.manifest}); build one with \`isoatlas build\``);
  }
  const manifest = await loadManifest(async (path) => readFile(join(opts.dir, path)).catch(() => null), `${opts.dir}/`);
  const release = manifest.index.release;
  const releasePrefix = prefix + releaseKeyPrefix(release);

  const pointerText = await getText(s3, bucket, prefix + POINTER_KEY);
  const current = pointerText ? parsePointer(pointerText) : null;
  // Content the bucket already has, by sha256, from the current release: copied, not uploaded.
  const known = new Map<string, string>();
  if (current && current.release !== release) {
    const previous = await loadManifest(async (path) => {
      const text = await getText(s3, bucket, prefix + current.prefix + path);
      return text === null ? null : Buffer.from(text, 'utf8');
    }, `s3://${bucket}/${prefix}${current.prefix}`).catch(() => null); // no usable previous manifest: upload everything
    for (const e of previous ? [...previous.entries, ...previous.shards.map((s) => s.entry)] : []) known.set(e.sha256, prefix + current.prefix + e.path);
  }
  const present = await listEtags(s3, bucket, releasePrefix);

  const summary: PublishSummary = { release, previous: current?.release ?? null, uploaded: 0, copied: 0, skipped: 0, bytesUploaded: 0, seconds: 0, pruned: [], invalidated: [] };
  // The manifest's shards and then its index go with the files (an unchanged shard is copied too).
  const files = [...manifest.entries, ...manifest.shards.map((s) => s.entry), { path: treePaths.manifest, size: manifest.indexBody.length, sha256: '', content_type: contentTypeOf(treePaths.manifest) }];
  const md5s = new Map<string, string>();
  const bar = opts.progress === false ? { tick() {}, stop() {} } : startProgress('publishing', files.length);

  await forEachLimited(files, opts.concurrency ?? 16, async (entry) => {
    const body = entry.path === treePaths.manifest ? manifest.indexBody : await readFile(join(opts.dir, entry.path));
    const md5 = createHash('md5').update(body).digest('hex');
    md5s.set(entry.path, md5);
    const key = releasePrefix + entry.path;
    const source = entry.sha256 ? known.get(entry.sha256) : undefined;
    if (present.get(entry.path) === md5) summary.skipped += 1;
    else if (source) {
      await s3.send(new CopyObjectCommand({ Bucket: bucket, Key: key, CopySource: `${bucket}/${encodeURI(source)}`, MetadataDirective: 'COPY' }));
      summary.copied += 1;
    } else {
      await s3.send(
        new PutObjectCommand({
          Bucket: bucket,
          Key: key,
          Body: body,
          ContentType: entry.content_type,
          CacheControl: RELEASE_CACHE_CONTROL,
          ContentMD5: createHash('md5').update(body).digest('base64'),
          Metadata: entry.sha256 ? { sha256: entry.sha256 } : undefined,
        }),
      );
      summary.uploaded += 1;
      summary.bytesUploaded += body.length;
    }
    bar.tick();
  });
  bar.stop();

  // Verify before switching: every file of the release is there with the right content. What the
  // listing does not confirm is asked for directly (a listing can lag or, on some S3-compatible
  // servers, skip keys at page boundaries).
  const after = await listEtags(s3, bucket, releasePrefix);
  const unconfirmed = files.filter((f) => after.get(f.path) !== md5s.get(f.path));
  const wrong: typeof files = [];
  await forEachLimited(unconfirmed, opts.concurrency ?? 16, async (f) => {
    const etag = await headEtag(s3, bucket, releasePrefix + f.path);
    if (etag !== md5s.get(f.path)) wrong.push(f);
  });
  if (wrong.length) throw new Error(`release ${release} is incomplete in s3://${bucket}/${releasePrefix} (${wrong.length} objects missing or different, e.g. ${wrong[0].path}); the pointer was not switched: run publish again`);

  const history = await readHistory(s3, bucket, prefix);
  if (history.at(-1) !== release) history.push(release);
  await writeHistory(s3, bucket, prefix, history.filter((r, i) => history.lastIndexOf(r) === i));
  await switchPointer(s3, bucket, prefix, {
    release,
    prefix: releaseKeyPrefix(release),
    manifest_sha256: createHash('sha256').update(manifest.indexBody).digest('hex'),
    published_at: new Date().toISOString(),
    previous: current && current.release !== release ? current.release : (current?.previous ?? null),
  });
  log(`s3://${bucket}/${prefix}${POINTER_KEY} → ${release}`);

  if (opts.keep !== undefined) summary.pruned = await prune(s3, bucket, prefix, release, opts.keep);
  if (opts.distributionId) summary.invalidated = await invalidate(opts.cloudfront ?? new CloudFrontClient({}), opts.distributionId);
  summary.seconds = (performance.now() - started) / 1000;
  return summary;
}

async function readHistory(s3: S3Client, bucket: string, prefix: string): Promise<string[]> {
  const text = await getText(s3, bucket, prefix + HISTORY_KEY);
  return text ? (JSON.parse(text) as { releases: string[] }).releases : [];
}

async function writeHistory(s3: S3Client, bucket: string, prefix: string, releases: string[]) {
  await s3.send(new PutObjectCommand({ Bucket: bucket, Key: prefix + HISTORY_KEY, Body: JSON.stringify({ releases }), ContentType: 'application/json', CacheControl: POINTER_CACHE_CONTROL }));
}

async function switchPointer(s3: S3Client, bucket: string, prefix: string, pointer: ReleasePointer) {
  await s3.send(
    new PutObjectCommand({ Bucket: bucket, Key: prefix + POINTER_KEY, Body: JSON.stringify(pointer), ContentType: 'application/json', CacheControl: POINTER_CACHE_CONTROL }),
  );
}

/** Deletes every release but the newest `keep` of the history (never the current one). */
async function prune(s3: S3Client, bucket: string, prefix: string, current: string, keep: number): Promise<string[]> {
  if (keep < 1) throw new UsageError('--keep must be at least 1');
  const history = await readHistory(s3, bucket, prefix);
  const kept = new Set([...history.slice(-keep), current]);
  const doomed = history.filter((r) => !kept.has(r));
  for (const release of doomed) {
    const releaseKeys = prefix + releaseKeyPrefix(release);
    // Listed and deleted until the listing comes back empty: a listing may miss keys (see verify).
    for (let round = 0; round < 5; round++) {
      const keys = [...(await listEtags(s3, bucket, releaseKeys)).keys()].map((k) => releaseKeys + k);
      if (keys.length === 0) break;
      for (let i = 0; i < keys.length; i += 1000) {
        await s3.send(new DeleteObjectsCommand({ Bucket: bucket, Delete: { Objects: keys.slice(i, i + 1000).map((Key) => ({ Key })), Quiet: true } }));
      }
    }
  }
  await writeHistory(s3, bucket, prefix, history.filter((r) => kept.has(r)));
  return doomed;
}

/** CloudFront caches the API's answers under unversioned URLs (/api/v1/…) and the pointer: those
 * must be invalidated when the release changes. Release files are versioned and never are. The
 * bucket prefix is the distribution's origin path (infra/stack.ts), so viewer paths never carry it. */
async function invalidate(cloudfront: Pick<CloudFrontClient, 'send'>, distributionId: string): Promise<string[]> {
  const paths = ['/api/v1/*', `/${POINTER_KEY}`];
  await cloudfront.send(
    new CreateInvalidationCommand({ DistributionId: distributionId, InvalidationBatch: { CallerReference: `isoatlas-${Date.now()}`, Paths: { Quantity: paths.length, Items: paths } } }),
  );
  return paths;
}

/** `isoatlas rollback`: points current.json back at an earlier, still published release. */
export async function rollback(opts: { s3: S3Client; bucket: string; prefix?: string; to?: string }): Promise<{ from: string; to: string }> {
  const prefix = normalizePrefix(opts.prefix);
  const pointerText = await getText(opts.s3, opts.bucket, prefix + POINTER_KEY);
  if (!pointerText) throw new UsageError(`nothing is published at s3://${opts.bucket}/${prefix}`);
  const current = parsePointer(pointerText);
  const history = await readHistory(opts.s3, opts.bucket, prefix);
  const target = opts.to ?? history[history.lastIndexOf(current.release) - 1] ?? current.previous;
  if (!target) throw new UsageError(`no release before ${current.release} to roll back to`);
  const manifestText = await getText(opts.s3, opts.bucket, prefix + releaseKeyPrefix(target) + treePaths.manifest);
  if (!manifestText) throw new UsageError(`release ${target} is not (or no longer) in s3://${opts.bucket}/${prefix}; published: ${history.join(', ')}`);
  await switchPointer(opts.s3, opts.bucket, prefix, {
    release: target,
    prefix: releaseKeyPrefix(target),
    manifest_sha256: createHash('sha256').update(manifestText).digest('hex'),
    published_at: new Date().toISOString(),
    previous: current.release,
  });
  return { from: current.release, to: target };
}
