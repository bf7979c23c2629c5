// A published store (edge/contract/store.ts) in an S3 bucket, as publish, rollback, releases and gc
// use it: its small JSON objects read with their ETag and rewritten only if unchanged (S3's
// conditional writes), and its objects listed by sha256.
import { GetObjectCommand, ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { EDGE_KEY, HISTORY_KEY, OBJECTS_PREFIX, POINTER_KEY, PROBE_KEY, emptyHistory, objectSha, parseEdgeRecord, parseHistory, parsePointer, type EdgeRecord, type ReleaseHistory, type ReleasePointer } from '../../edge/contract/store.js';
import { forEachLimited } from '../common/concurrency.js';
import { StorageError, noteWhere } from '../common/storage-errors.js';

/** The pointer and history must stay fresh at the CDN; objects never change. */
export const POINTER_CACHE_CONTROL = 'public, max-age=10, must-revalidate';
export const OBJECT_CACHE_CONTROL = 'public, max-age=31536000, immutable';

/** An S3 client for real AWS, or for an S3-compatible endpoint (path-style, as local servers need).
 * Its errors note where they happened, for the CLI to explain (storage-errors.ts). */
export function s3Client(opts: { region?: string; endpoint?: string }): S3Client {
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1';
  return noteWhere(new S3Client({
    region,
    endpoint: opts.endpoint,
    forcePathStyle: Boolean(opts.endpoint),
    // Plain Content-MD5 integrity instead of the SDK's newer trailing checksums, which older
    // S3-compatible servers do not understand.
    requestChecksumCalculation: 'WHEN_REQUIRED',
    responseChecksumValidation: 'WHEN_REQUIRED',
  }), opts.endpoint, region);
}

export const normalizePrefix = (prefix = '') => (prefix === '' || prefix.endsWith('/') ? prefix : `${prefix}/`);

const statusOf = (err: unknown) => (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;

export class StoreBucket {
  readonly where: string;
  constructor(
    readonly s3: S3Client,
    readonly bucket: string,
    prefix = '',
  ) {
    this.prefix = normalizePrefix(prefix);
    this.where = `s3://${bucket}/${this.prefix}`;
  }
  readonly prefix: string;

  /** An object's bytes and ETag, or null when there is none. */
  async get(key: string): Promise<{ body: Buffer; etag: string } | null> {
    try {
      const out = await this.s3.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.prefix + key }));
      return { body: Buffer.from(await out.Body!.transformToByteArray()), etag: out.ETag ?? '' };
    } catch (err) {
      const name = (err as Error).name;
      // A missing bucket is a 404 too, but not an empty store: it is said, not taken for one.
      if (name !== 'NoSuchBucket' && (name === 'NoSuchKey' || name === 'NotFound' || statusOf(err) === 404)) return null;
      throw err;
    }
  }

  async pointer(): Promise<ReleasePointer | null> {
    const got = await this.get(POINTER_KEY);
    return got ? parseOr(this.where + POINTER_KEY, () => parsePointer(got.body.toString('utf8'))) : null;
  }

  async history(): Promise<ReleaseHistory> {
    const got = await this.get(HISTORY_KEY);
    return got ? parseOr(this.where + HISTORY_KEY, () => parseHistory(got.body.toString('utf8'))) : emptyHistory();
  }

  /** The edge record: which KeyValueStore pins this store's release, or null for a store without. */
  async edge(): Promise<EdgeRecord | null> {
    const got = await this.get(EDGE_KEY);
    return got ? parseOr(this.where + EDGE_KEY, () => parseEdgeRecord(got.body.toString('utf8'))) : null;
  }

  /** Read-modify-write of the history, conditional on its ETag: a concurrent writer makes S3 refuse
   * the write (412, or 409 while both are in flight), and the change is made again on what it wrote.
   * `change` returns what to write, or null to leave the history as it is. */
  async updateHistory(change: Change<ReleaseHistory>): Promise<ReleaseHistory> {
    return this.update(HISTORY_KEY, (body) => (body ? parseOr(this.where + HISTORY_KEY, () => parseHistory(body)) : emptyHistory()), change);
  }

  /** The same for the pointer. `change` may read the history: read after the pointer, so that a
   * history changed after it is read means a pointer changed after the pointer was read (publishes
   * write the history before the pointer), which makes this write fail and `change` run again. */
  async updatePointer(change: Change<ReleasePointer | null>): Promise<ReleasePointer | null> {
    return this.update(POINTER_KEY, (body) => (body ? parseOr(this.where + POINTER_KEY, () => parsePointer(body)) : null), change);
  }

  /** The same for the edge record: two first publishes naming different stores cannot both win. */
  async updateEdge(change: Change<EdgeRecord | null>): Promise<EdgeRecord | null> {
    return this.update(EDGE_KEY, (body) => (body ? parseOr(this.where + EDGE_KEY, () => parseEdgeRecord(body)) : null), change);
  }

  private async update<T>(key: string, parse: (body: string | null) => T, change: Change<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      const got = await this.get(key);
      const value = parse(got ? got.body.toString('utf8') : null);
      const next = await change(value);
      if (next === null) return value;
      try {
        await this.s3.send(
          new PutObjectCommand({
            Bucket: this.bucket,
            Key: this.prefix + key,
            Body: JSON.stringify(next),
            ContentType: 'application/json',
            CacheControl: POINTER_CACHE_CONTROL,
            ...(got ? { IfMatch: got.etag } : { IfNoneMatch: '*' }),
          }),
        );
        return next;
      } catch (err) {
        const status = statusOf(err);
        if ((status !== 412 && status !== 409) || attempt >= 20) throw err;
        await new Promise((resolve) => setTimeout(resolve, 20 + Math.random() * 100 * attempt));
      }
    }
  }

  /** Refuses a server that ignores S3's conditional writes: publish, rollback and gc rely on them
   * to never lose a history entry nor move the pointer on stale facts. A constant probe object is
   * written with If-None-Match: * (once it exists S3 answers 412) and with If-Match on an ETag it
   * cannot have (412 too); a server that answers 200 to either ignores the header. */
  async checkConditionalWrites(command: string): Promise<void> {
    const put = (condition: { IfNoneMatch?: string; IfMatch?: string }) =>
      this.s3
        .send(new PutObjectCommand({ Bucket: this.bucket, Key: this.prefix + PROBE_KEY, Body: PROBE_BODY, ContentType: 'application/json', CacheControl: POINTER_CACHE_CONTROL, ...condition }))
        .then(() => 200, (err) => {
          const status = statusOf(err);
          if (status === 412 || status === 409) return status;
          throw err;
        });
    // The first run on a store creates the probe; the second write must then be refused.
    const created = (await put({ IfNoneMatch: '*' })) === 200;
    const ignored: string[] = [];
    if (created && (await put({ IfNoneMatch: '*' })) === 200) ignored.push('If-None-Match: *');
    if ((await put({ IfMatch: '"00000000000000000000000000000000"' })) === 200) ignored.push('If-Match');
    if (ignored.length === 0) return;
    const endpoint = await endpointOf(this.s3);
    throw new StorageError(
      `the S3 server at ${endpoint} ignores conditional writes (${ignored.join(' and ')} on PutObject of ${this.where}${PROBE_KEY} succeeded where S3 answers 412 Precondition Failed), ` +
        `so ${command} could lose another command's entry in releases.json or move current.json on stale facts; ${command} changed nothing but that probe. ` +
        'Use a server that honours them (AWS S3 does; for a local try-out, `npm run local-s3` in docs/OPERATIONS.md), ' +
        `or, only if no other publish, rollback or gc can run on this store meanwhile, add --unsafe-single-writer`,
    );
  }

  /** Every object of the store: sha256 → size and last modification. Listed in 16 slices at once
   * (by the first hex digit), so a store of a million objects lists in about a minute. */
  async objects(concurrency = 16): Promise<Map<string, { size: number; modified: Date }>> {
    const out = new Map<string, { size: number; modified: Date }>();
    await forEachLimited([...'0123456789abcdef'], concurrency, async (digit) => {
      const prefix = `${this.prefix}${OBJECTS_PREFIX}${digit}`;
      let token: string | undefined;
      do {
        const page = await this.s3.send(new ListObjectsV2Command({ Bucket: this.bucket, Prefix: prefix, ContinuationToken: token }));
        for (const o of page.Contents ?? []) {
          const sha = objectSha(o.Key!.slice(this.prefix.length));
          if (sha) out.set(sha, { size: o.Size ?? -1, modified: o.LastModified ?? new Date(0) });
        }
        token = page.IsTruncated ? page.NextContinuationToken : undefined;
      } while (token);
    });
    return out;
  }
}

/** What a read-modify-write does with the value it read: the value to write, or null for none. */
type Change<T> = (value: T) => T | null | Promise<T | null>;

const PROBE_BODY = JSON.stringify({ purpose: 'isoatlas checks here that this server refuses a conditional write whose condition fails' });

async function endpointOf(s3: S3Client): Promise<string> {
  const endpoint = s3.config.endpoint ? await s3.config.endpoint() : null;
  return endpoint ? `${endpoint.protocol}//${endpoint.hostname}${endpoint.port ? `:${endpoint.port}` : ''}${endpoint.path === '/' ? '' : endpoint.path}` : 'AWS S3';
}

function parseOr<T>(where: string, parse: () => T): T {
  try {
    return parse();
  } catch (err) {
    throw new Error(`${where}: ${(err as Error).message}; is this bucket prefix an isoatlas store published by this version?`);
  }
}
