// A store's backend in an S3 bucket below a prefix: the only place that sends S3 commands for
// publish, rollback, releases, gc and mirroring. S3's conditional writes (If-None-Match: *, If-Match
// on PutObject) refuse a failed condition with 412, or 409 while another conditional write of the
// key is in flight; both become ConditionFailed. Errors otherwise stay the SDK's own, so the CLI can
// say which operation failed where (build/common/storage-errors.ts).
import {
  DeleteObjectsCommand,
  GetObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type S3Client,
} from '@aws-sdk/client-s3';
import { createHash } from 'node:crypto';
import {
  ConditionFailed,
  StorageError,
  type ListedObject,
  type StoreBackend,
  type StoredObject,
  type WriteOptions,
} from './backend.js';

export const normalizePrefix = (prefix = '') => (prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`);

const statusOf = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

/** A body's bytes in one buffer: its chunks copied once into memory left unfilled (the SDK's own
 * collector fills a new array with zeros first: about half its cost on a body of many KB). */
export async function collect(body: AsyncIterable<Uint8Array>): Promise<Buffer> {
  const chunks: Uint8Array[] = [];
  let length = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    length += chunk.length;
  }
  return Buffer.concat(chunks, length);
}

/** DeleteObjects takes at most this many keys. */
const DELETE_BATCH = 1000;

export class S3Backend implements StoreBackend {
  readonly where: string;
  readonly description: string;
  readonly noun = 'bucket prefix';
  readonly prefix: string;
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
    prefix = '',
  ) {
    this.prefix = normalizePrefix(prefix);
    this.where = `s3://${bucket}/${this.prefix}`;
    this.description = this.where;
  }

  /** `signal` ends the request, reading the body included (the edge's time budget). `range`: only
   * bytes `start` to `end` (inclusive), one range per GET as S3 allows
   * (https://docs.aws.amazon.com/sdk-for-kotlin/api/latest/s3/aws.sdk.kotlin.services.s3.model/-get-object-request/range.html). */
  async read(key: string, signal?: AbortSignal, range?: { start: number; end: number }): Promise<StoredObject | null> {
    try {
      const out = await this.s3.send(
        new GetObjectCommand({
          Bucket: this.bucket,
          Key: this.prefix + key,
          ...(range ? { Range: `bytes=${range.start}-${range.end}` } : {}),
        }),
        { abortSignal: signal },
      );
      return { body: await collect(out.Body as AsyncIterable<Uint8Array>), etag: out.ETag ?? '' };
    } catch (err) {
      const name = (err as Error).name;
      // A missing bucket is a 404 too, but not an empty store: it is said, not taken for one.
      if (name !== 'NoSuchBucket' && (name === 'NoSuchKey' || name === 'NotFound' || statusOf(err) === 404))
        return null;
      throw err;
    }
  }

  async write(key: string, body: Uint8Array, o: WriteOptions): Promise<void> {
    try {
      await this.s3.send(
        new PutObjectCommand({
          Bucket: this.bucket,
          Key: this.prefix + key,
          Body: body,
          ContentType: o.contentType,
          CacheControl: o.cacheControl,
          // S3 refuses the upload if the bytes it received differ from these.
          ContentMD5: createHash('md5').update(body).digest('base64'),
          ...(o.ifNoneMatch ? { IfNoneMatch: '*' } : {}),
          ...(o.ifMatch !== undefined ? { IfMatch: o.ifMatch } : {}),
        }),
      );
    } catch (err) {
      const status = statusOf(err);
      if ((o.ifNoneMatch || o.ifMatch !== undefined) && (status === 412 || status === 409))
        throw new ConditionFailed(key, status);
      throw err;
    }
  }

  async list(prefix: string): Promise<ListedObject[]> {
    const out: ListedObject[] = [];
    let token: string | undefined;
    do {
      const page = await this.s3.send(
        new ListObjectsV2Command({ Bucket: this.bucket, Prefix: this.prefix + prefix, ContinuationToken: token }),
      );
      for (const o of page.Contents ?? [])
        out.push({
          key: o.Key!.slice(this.prefix.length),
          size: o.Size ?? -1,
          modified: o.LastModified ?? new Date(0),
        });
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return out;
  }

  async remove(keys: string[]): Promise<void> {
    for (let i = 0; i < keys.length; i += DELETE_BATCH) {
      const batch = keys.slice(i, i + DELETE_BATCH);
      const out = await this.s3.send(
        new DeleteObjectsCommand({
          Bucket: this.bucket,
          Delete: { Objects: batch.map((key) => ({ Key: this.prefix + key })), Quiet: true },
        }),
      );
      // DeleteObjects answers 200 with a list of the keys it could not delete.
      const failed = out.Errors ?? [];
      if (failed.length) {
        throw new StorageError(
          `DeleteObjects in ${this.where} failed for ${failed.length} of ${batch.length} keys (first: ${failed[0].Key}: ${failed[0].Code} ${failed[0].Message ?? ''}); check that the credentials may delete in ${this.bucket}, then run the command again`,
        );
      }
    }
  }

  async server(): Promise<string> {
    const endpoint = this.s3.config.endpoint ? await this.s3.config.endpoint() : null;
    return `the S3 server at ${endpoint ? `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ''}${endpoint.path === '/' ? '' : endpoint.path}` : 'AWS S3'}`;
  }
}
