// Reads objects of a bucket with the S3 API (GetObject): the edge in the CDN deployment (with the
// Lambda's role) and `isoatlas mirror --from s3://…`. Wrap it in PointerOrigin to serve releases.
import { GetObjectCommand, NoSuchKey, S3Client } from '@aws-sdk/client-s3';
import { OriginError, type Origin, type OriginObject } from '../origin.js';

export class S3RawOrigin implements Origin {
  readonly description: string;

  constructor(
    private readonly client: S3Client,
    private readonly bucket: string,
    private readonly keyPrefix = '',
    private readonly timeoutMs = 5_000,
  ) {
    this.description = `s3://${bucket}/${keyPrefix}`;
  }

  async read(path: string): Promise<OriginObject | null> {
    try {
      const out = await this.client.send(new GetObjectCommand({ Bucket: this.bucket, Key: this.keyPrefix + path }), {
        abortSignal: AbortSignal.timeout(this.timeoutMs),
      });
      return { body: await out.Body!.transformToByteArray() };
    } catch (err) {
      const name = (err as Error).name;
      if (err instanceof NoSuchKey || name === 'NoSuchKey' || name === 'NotFound') return null;
      if (name === 'TimeoutError' || name === 'AbortError') throw new OriginError(`${this.description}${path}: no answer within ${this.timeoutMs} ms`, 'timeout');
      throw new OriginError(`${this.description}${path}: ${name}`, 'unavailable');
    }
  }
}
