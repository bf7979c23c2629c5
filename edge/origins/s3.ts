// Reads objects of a bucket with the S3 API (GetObject): the edge in the CDN deployment (with the
// Lambda's role) and `isoatlas mirror --from s3://…`: the read half of the store's S3 backend, with
// a time budget and failures said as an origin's. Wrap it in StoreOrigin to serve releases.
import type { S3Client } from '@aws-sdk/client-s3';
import { OriginError, type Origin, type OriginObject } from '../origin.js';
import { S3Backend } from '../store/s3-backend.js';

export class S3RawOrigin implements Origin {
  readonly description: string;
  private readonly backend: S3Backend;

  constructor(
    client: S3Client,
    bucket: string,
    keyPrefix = '',
    private readonly timeoutMs = 5_000,
  ) {
    this.backend = new S3Backend(client, bucket, keyPrefix);
    this.description = `s3://${bucket}/${keyPrefix}`;
  }

  read(path: string): Promise<OriginObject | null> {
    return this.get(path);
  }

  /** S3 answers a range of a key with exactly its bytes (a range past the end is cut to it). */
  async readRange(path: string, start: number, end: number): Promise<OriginObject | null> {
    const got = await this.get(path, { start, end });
    if (got && got.body.length !== end - start + 1)
      throw new OriginError(
        `${this.description}${path}: asked for bytes ${start}-${end}, got ${got.body.length} bytes`,
        'unavailable',
      );
    return got;
  }

  private async get(path: string, range?: { start: number; end: number }): Promise<OriginObject | null> {
    const budget = AbortSignal.timeout(this.timeoutMs);
    try {
      const got = await this.backend.read(path, budget, range);
      return got ? { body: got.body } : null;
    } catch (err) {
      const name = (err as Error).name;
      // Our budget ran out (while waiting or while reading the body). Not the error's name: the SDK
      // names a connection reset "TimeoutError" too.
      if (budget.aborted)
        throw new OriginError(`${this.description}${path}: no answer within ${this.timeoutMs} ms`, 'timeout');
      // S3 throttling or a 503 after the SDK's own retries: the store is there but busy.
      const status = (err as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode;
      const overloaded =
        status === 503 ||
        status === 429 ||
        ['SlowDown', 'ServiceUnavailable', 'ThrottlingException', 'RequestLimitExceeded'].includes(name);
      // A network failure is a plain Error whose code says why (ECONNREFUSED, ENOTFOUND, a TLS code).
      const e = err as Error & { code?: unknown; cause?: { code?: unknown } };
      const code = [e.code, e.cause?.code].find((c): c is string => typeof c === 'string');
      throw new OriginError(
        `${this.description}${path}: ${code && name === 'Error' ? code : name}`,
        overloaded ? 'overloaded' : 'unavailable',
        undefined,
        code,
        status,
      );
    }
  }
}
