// S3 failures as a curator can act on them. The SDK's errors say what went wrong to the SDK
// ("Could not load credentials from any providers", "The specified bucket does not exist"); the CLI
// says which operation on which bucket and key, at which endpoint, and what to do about it, and exits
// with EXIT.storage. The client's errors keep their own name and status (the code that reads them,
// e.g. a conditional write's 412, is unchanged): they only gain a note of where they happened.
import type { S3Client } from '@aws-sdk/client-s3';
import { UsageError } from './errors.js';
import { OriginError } from '../../edge/origin.js';
import { StorageError } from '../../edge/store/backend.js';

// Defined with the store's backends, which throw it too (edge/store/backend.ts).
export { StorageError } from '../../edge/store/backend.js';

export interface Where {
  operation: string;
  bucket?: string;
  key?: string;
  endpoint: string;
}

const WHERE = Symbol('isoatlas.where');

/** `--endpoint` as a URL: `127.0.0.1:9000` is a common slip for `http://127.0.0.1:9000`. */
export function parseEndpoint(value: string): string {
  let url: URL | null = null;
  try {
    url = new URL(value);
  } catch {
    // not a URL at all
  }
  if (!url || (url.protocol !== 'http:' && url.protocol !== 'https:')) {
    throw new UsageError(
      `--endpoint ${value} is not an http(s) URL: write it with its scheme, e.g. http://${value.replace(/^[a-z]+:\/\//i, '')}`,
    );
  }
  return value;
}

/** Notes on an S3 error which operation, bucket and key it was about (a note it has already stays). */
export function noteWhereOn(err: unknown, where: Where): unknown {
  if (err && typeof err === 'object' && !(WHERE in err)) (err as Record<symbol, Where>)[WHERE] = where;
  return err;
}

/** Notes on every error of `client` which operation, bucket and key it was about. */
export function noteWhere(client: S3Client, endpoint: string | undefined, region: string): S3Client {
  const at = endpoint ?? `AWS S3 (${region})`;
  client.middlewareStack.add(
    (next, context) => async (args) => {
      try {
        return await next(args);
      } catch (err) {
        const input = args.input as { Bucket?: string; Key?: string; Prefix?: string };
        throw noteWhereOn(err, {
          operation: context.commandName ?? 'request',
          bucket: input.Bucket,
          key: input.Key ?? input.Prefix,
          endpoint: at,
        });
      }
    },
    { step: 'initialize', name: 'isoatlasNoteWhere' },
  );
  return client;
}

/** The StorageError a CLI user reads for an S3 failure, or null when `err` is not one. */
export function explainStorageError(err: unknown): StorageError | null {
  if (!err || typeof err !== 'object') return null;
  // Already explained where it was thrown (the CDN's KeyValueStore: build/publish/edge-pin.ts).
  if (err instanceof StorageError) return err;
  // A mirror's source (a URL, a bucket through the edge's origins) that cannot be read.
  if (err instanceof OriginError) {
    return new StorageError(
      `cannot read the source: ${err.message}. Check the URL or bucket, that the source is up, and any key it needs (ISOATLAS_API_KEY)`,
    );
  }
  const e = err as Error & { code?: string; $metadata?: { httpStatusCode?: number }; cause?: { code?: string } };
  const where = (err as Record<symbol, Where | undefined>)[WHERE];
  if (e.name === 'CredentialsProviderError' || /Could not load credentials/.test(e.message ?? '')) {
    return new StorageError(
      `no AWS credentials${where ? ` for ${where.operation} at ${where.endpoint}` : ''}: set AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY (or AWS_PROFILE); a local S3 server takes any pair, e.g. S3RVER / S3RVER for s3rver`,
    );
  }
  if (!where) return null;
  const object = `${where.bucket ? `s3://${where.bucket}/${where.key ?? ''}` : 'the service'}`;
  const status = e.$metadata?.httpStatusCode;
  const code = e.code ?? e.cause?.code ?? (e as { errno?: string }).errno;
  const head = `${where.operation} ${object} at ${where.endpoint} failed`;
  if (e.name === 'NoSuchBucket')
    return new StorageError(
      `${head}: bucket ${where.bucket} does not exist there. Create it, or check --bucket, --endpoint and --region`,
    );
  if (e.name === 'AccessDenied' || e.name === 'Forbidden' || status === 403) {
    return new StorageError(
      `${head}: access denied (403). The credentials in use may not ${where.operation.replace(/Command$/, '')} in ${where.bucket}: check their policy, or the bucket name`,
    );
  }
  if (typeof code === 'string' && /^(ECONNREFUSED|ENOTFOUND|EAI_AGAIN|ECONNRESET|ETIMEDOUT|EHOSTUNREACH)$/.test(code)) {
    return new StorageError(
      `${head}: cannot reach the endpoint (${code}). Is the server running and --endpoint right (scheme, host and port)?`,
    );
  }
  if (status === 500 && e.name === 'InternalError') {
    return new StorageError(
      `${head}: the server answered 500 InternalError. If it is s3rver, it must run under \`node --openssl-legacy-provider\` (\`npm run local-s3\` does, and adds the conditional writes publish needs); otherwise try again, or read the server's log`,
    );
  }
  return new StorageError(`${head}: ${e.name}${status ? ` (HTTP ${status})` : ''}: ${e.message}`);
}
