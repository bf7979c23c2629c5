// How publish stores objects and packs, the bulk of its requests: through the store (any backend),
// or, for a bucket, as bare signed PUTs. A publish sends one PUT per object the store lacks, tens of
// thousands for a first publish, and the S3 client's command pipeline (its middleware: endpoint
// rules, serialization, checksums, retries, signing) costs several times the request itself in CPU
// (BENCHMARKS.md, publish section). So these PUTs are built once and signed one by one with the
// client's own signer (its credentials, region and clock offset) and sent through the client's own
// HTTP handler (its kept-alive connections): what the SDK would send, less the per-command work.
//   - Where a PUT goes is resolved once by the client itself: a PutObject is built up to its
//     signing step and stopped there, and its URL is reused for every key (endpoint rules, path or
//     virtual-host style, a configured endpoint URL all as the SDK decides).
//   - The payload hash S3's signature wants is the object's sha256, its name: it is given as
//     x-amz-content-sha256 (S3: sig-v4-header-based-auth, "signed payload"), so the body is not
//     hashed again, and S3 refuses a body that does not hash to it. No Content-MD5 is needed then.
//   - Retries as the SDK's standard mode does for these: a dropped connection, a 5xx, 429 or
//     SlowDown, three attempts with jittered backoff. Other answers fail at once, as S3 errors
//     named like the SDK's (`name` is S3's code, `$metadata.httpStatusCode` its status) and noted
//     with where they happened (build/common/storage-errors.ts), so the CLI explains them the same.
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { objectKey } from '../../edge/contract/store-layout.js';
import { packKey } from '../../edge/contract/packs.js';
import { OBJECT_CACHE_CONTROL, type ReleaseStore } from '../../edge/store/release-store.js';
import { collect } from '../../edge/store/s3-backend.js';
import { noteWhereOn } from '../common/storage-errors.js';

/** Where publish's objects and packs go. */
export interface Uploads {
  /** Stores an object under its sha256, which the caller checked its bytes hash to. */
  object(sha256: string, body: Uint8Array, contentType: string): Promise<void>;
  /** Stores a pack once: a pack already there has the same bytes, so that is done too. */
  pack(sha256: string, body: Uint8Array): Promise<void>;
}

/** Uploads through the store's backend (a directory, or a bucket through the S3 commands). */
export const storeUploads = (store: ReleaseStore): Uploads => ({
  object: (sha256, body, contentType) => store.putObject(sha256, body, contentType),
  pack: (sha256, body) => store.putPack(sha256, body),
});

/** Attempts of one PUT, as the SDK's standard retry mode makes. */
const ATTEMPTS = 3;
const BACKOFF_BASE_MS = 100;

/** A PutObject resolved up to its signing: thrown to stop it there. */
class Resolved {
  constructor(
    readonly request: SignableRequest,
    readonly scheme: { name?: string; signingName?: string; signingRegion?: string } | undefined,
  ) {}
}

interface SignableRequest {
  method: string;
  protocol: string;
  hostname: string;
  port?: number;
  path: string;
  query: Record<string, string>;
  headers: Record<string, string>;
  body?: unknown;
}

/** S3 keys in a URL path: each segment encoded as the SDK encodes a key (RFC 3986 reserved marks too). */
const encodeKey = (key: string) =>
  key
    .split('/')
    .map((s) => encodeURIComponent(s).replace(/[!'()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`))
    .join('/');

/** Bare signed PUTs into `bucket` below `prefix` (normalized, as S3Backend has it), or null when the
 * client is set up in a way they do not cover (a signing scheme other than SigV4, a cached command
 * pipeline that would not stop where asked): the store's uploads are used then. */
export async function s3Uploads(s3: S3Client, bucket: string, prefix: string): Promise<Uploads | null> {
  const config = s3.config as S3Client['config'] & { cacheMiddleware?: boolean; systemClockOffset?: number };
  if (config.cacheMiddleware) return null;
  const probeKey = `${prefix}${objectKey('0'.repeat(64))}`;
  const command = new PutObjectCommand({ Bucket: bucket, Key: probeKey, Body: new Uint8Array(0) });
  command.middlewareStack.add(
    (_next, context) => async (args) => {
      const endpoint = context.endpointV2 as { properties?: { authSchemes?: Resolved['scheme'][] } } | undefined;
      throw new Resolved(args.request as SignableRequest, endpoint?.properties?.authSchemes?.[0]);
    },
    { step: 'build', priority: 'high', name: 'isoatlasResolvePut' },
  );
  let resolved: Resolved | null = null;
  try {
    await s3.send(command);
  } catch (err) {
    if (!(err instanceof Resolved)) throw err;
    resolved = err;
  }
  if (!resolved) return null;
  const { request: base, scheme } = resolved;
  if (scheme && scheme.name !== 'sigv4') return null;
  const suffix = encodeKey(probeKey);
  if (!base.path.endsWith(suffix)) return null;
  // The prefix encoded once: the keys below it are hex digits and slashes, which need none.
  const pathPrefix = base.path.slice(0, -suffix.length) + encodeKey(prefix);
  const region = await config.region();
  const signingRegion = scheme?.signingRegion ?? region;
  const signingService = scheme?.signingName ?? 's3';
  const signer = await config.signer();
  const handler = config.requestHandler as {
    handle(request: SignableRequest): Promise<{ response: PutResponse }>;
  };
  const host = base.headers.host ?? `${base.hostname}${base.port ? `:${base.port}` : ''}`;
  const endpoint =
    config.isCustomEndpoint && config.endpoint ? describe(await config.endpoint()) : `AWS S3 (${region})`;

  const put = async (keyInPrefix: string, body: Uint8Array, sha256: string, headers: Record<string, string>) => {
    for (let attempt = 1; ; attempt++) {
      const request: SignableRequest = {
        method: 'PUT',
        protocol: base.protocol,
        hostname: base.hostname,
        port: base.port,
        path: pathPrefix + keyInPrefix,
        query: {},
        headers: {
          host,
          'content-length': String(body.length),
          'x-amz-content-sha256': sha256,
          ...headers,
        },
        body,
      };
      let failure: unknown;
      try {
        const signed = (await signer.sign(request as never, {
          signingDate: new Date(Date.now() + (config.systemClockOffset ?? 0)),
          signingRegion,
          signingService,
        })) as unknown as SignableRequest;
        const { response } = await handler.handle(signed);
        const answer = await readAll(response.body);
        if (response.statusCode >= 200 && response.statusCode < 300) return response.statusCode;
        failure = s3Error(response.statusCode, answer);
        if (headers['if-none-match'] && (response.statusCode === 412 || response.statusCode === 409))
          return response.statusCode;
      } catch (err) {
        failure = err;
      }
      if (attempt >= ATTEMPTS || !retryable(failure))
        throw noteWhereOn(failure, { operation: 'PutObjectCommand', bucket, key: prefix + keyInPrefix, endpoint });
      await new Promise((resolve) => setTimeout(resolve, Math.random() * BACKOFF_BASE_MS * 2 ** attempt));
    }
  };
  return {
    async object(sha256, body, contentType) {
      await put(objectKey(sha256), body, sha256, {
        'content-type': contentType,
        'cache-control': OBJECT_CACHE_CONTROL,
      });
    },
    async pack(sha256, body) {
      await put(packKey(sha256), body, sha256, {
        'content-type': 'application/octet-stream',
        'cache-control': OBJECT_CACHE_CONTROL,
        'if-none-match': '*',
      });
    },
  };
}

interface PutResponse {
  statusCode: number;
  body?: AsyncIterable<Uint8Array> & { resume?: () => void };
}

const describe = (e: { protocol: string; hostname: string; port?: number; path: string }) =>
  `${e.protocol}//${e.hostname}${e.port ? `:${e.port}` : ''}${e.path === '/' ? '' : e.path}`;

async function readAll(body: PutResponse['body']): Promise<string> {
  return body ? (await collect(body)).toString('utf8') : '';
}

/** An S3 error answer as the SDK names it: S3's code as the name, its message, the HTTP status. */
function s3Error(status: number, xml: string): Error {
  const field = (name: string) => new RegExp(`<${name}>([^<]*)</${name}>`).exec(xml)?.[1];
  const code = field('Code') ?? (status === 404 ? 'NotFound' : `Http${status}`);
  return Object.assign(new Error(field('Message') ?? `HTTP ${status}`), {
    name: code,
    $fault: status >= 500 ? 'server' : 'client',
    $metadata: { httpStatusCode: status },
  });
}

/** Connection failures worth another attempt (the SDK's standard mode retries these too). */
const TRANSIENT_CODES = new Set(['ECONNRESET', 'ECONNREFUSED', 'EPIPE', 'ETIMEDOUT']);

/** What the SDK's standard mode retries for a PUT: transient answers and dropped connections. */
function retryable(err: unknown): boolean {
  const e = err as { name?: string; code?: string; message?: string; $metadata?: { httpStatusCode?: number } };
  const status = e?.$metadata?.httpStatusCode;
  if (status !== undefined)
    return status >= 500 || status === 429 || e.name === 'SlowDown' || e.name === 'RequestTimeout';
  return (
    (e?.code !== undefined && TRANSIENT_CODES.has(e.code)) ||
    e?.name === 'TimeoutError' ||
    /socket hang up/.test(e?.message ?? '')
  );
}
