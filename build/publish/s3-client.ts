// The S3 client publish, rollback, releases and gc reach a bucket with, and the store over it
// (edge/store/: S3Backend sends every S3 command, ReleaseStore knows the layout).
import { S3Client } from '@aws-sdk/client-s3';
import { noteWhere } from '../common/storage-errors.js';
import { ReleaseStore } from '../../edge/store/release-store.js';
import { S3Backend } from '../../edge/store/s3-backend.js';

/** An S3 client for real AWS, or for an S3-compatible endpoint (path-style, as local servers need).
 * Its errors note where they happened, for the CLI to explain (storage-errors.ts). */
export function s3Client(opts: { region?: string; endpoint?: string }): S3Client {
  const region = opts.region ?? process.env.AWS_REGION ?? 'us-east-1';
  return noteWhere(
    new S3Client({
      region,
      endpoint: opts.endpoint,
      forcePathStyle: Boolean(opts.endpoint),
      // Plain Content-MD5 integrity instead of the SDK's newer trailing checksums, which older
      // S3-compatible servers do not understand.
      requestChecksumCalculation: 'WHEN_REQUIRED',
      responseChecksumValidation: 'WHEN_REQUIRED',
    }),
    opts.endpoint,
    region,
  );
}

/** Where a command works: a store given whole (any backend: a mirror's directory), or a bucket. */
export interface StoreLocation {
  store?: ReleaseStore;
  s3?: S3Client;
  bucket?: string;
  prefix?: string;
}

export function openStore(at: StoreLocation): ReleaseStore {
  if (at.store) return at.store;
  if (!at.s3 || at.bucket === undefined)
    throw new Error('a store needs either a ReleaseStore or an S3 client and a bucket');
  return new ReleaseStore(new S3Backend(at.s3, at.bucket, at.prefix));
}
