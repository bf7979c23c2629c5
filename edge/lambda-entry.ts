// The Lambda@Edge functions as deployed, from one bundle: `handler` (origin-request: serves, and
// CloudFront caches its answers) and `viewerRequest` (API keys and quotas on every request, with
// DynamoDB tables shared by every edge location, failing open to per-instance limits). Lambda@Edge
// has no environment variables, so the configuration is fixed at bundle time (`isoatlas
// bundle-edge` defines __ISOATLAS_EDGE_CONFIG__).
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createHandler } from './handler.js';
import { HttpOrigin } from './origins/http.js';
import { PointerOrigin } from './origins/pointer.js';
import { S3RawOrigin } from './origins/s3.js';
import { S3Client } from '@aws-sdk/client-s3';
import type { Origin, VersionedOrigin } from './origin.js';
import { createLambdaEdgeHandler, createViewerRequestHandler, type CloudFrontRequestEvent } from './adapters/lambda-edge.js';
import { AccessControl } from './access/control.js';
import { resolveAccessConfig } from './access/config.js';
import { importServerSecret } from './access/key-format.js';
import { DynamoQuotaStore } from './access/stores/dynamodb.js';
import { DynamoKeyRegistry } from './access/stores/dynamodb-keys.js';
import { FailOpenQuotaStore } from './access/stores/resilient.js';

export interface EdgeBundleConfig {
  /** A tree below a base URL; with `published`, a published bucket layout (current.json + releases/). */
  originBaseUrl?: string;
  published?: boolean;
  /** A published bucket read with the S3 API (the CDN deployment: the function's role may read it). */
  s3?: { bucket: string; region: string; prefix?: string; endpoint?: string };
  structureBaseUrl?: string;
  access?: {
    config: unknown;
    region: string;
    quotaTable: string;
    keysTable: string;
    /** Hex HMAC secret keying the stored key hashes. */
    keySecret: string;
    endpoint?: string;
  };
}

declare const __ISOATLAS_EDGE_CONFIG__: EdgeBundleConfig;

function originOf(config: EdgeBundleConfig): Origin | VersionedOrigin {
  if (config.s3) {
    const { bucket, region, prefix, endpoint } = config.s3;
    const client = new S3Client({ region, endpoint, forcePathStyle: Boolean(endpoint) });
    return new PointerOrigin(new S3RawOrigin(client, bucket, prefix ?? ''));
  }
  if (!config.originBaseUrl) throw new Error('edge bundle config names no origin (originBaseUrl or s3)');
  const http = new HttpOrigin(config.originBaseUrl);
  return config.published ? new PointerOrigin(http) : http;
}

async function accessControl(a: NonNullable<EdgeBundleConfig['access']>): Promise<AccessControl> {
  const client = new DynamoDBClient({ region: a.region, endpoint: a.endpoint });
  return new AccessControl({
    config: resolveAccessConfig(a.config),
    store: new FailOpenQuotaStore(new DynamoQuotaStore(client, a.quotaTable)),
    keys: new DynamoKeyRegistry(client, a.keysTable),
    secret: await importServerSecret(a.keySecret),
  });
}

/** Origin-request: serves (CloudFront caches what it answers). Access control is not repeated here:
 * it runs at viewer-request, on every request including cache hits. Built once per Lambda instance,
 * so the alias maps and search index it loads are kept across invocations. */
export function originRequestHandler(config: EdgeBundleConfig) {
  const handler = createHandler({ origin: originOf(config), structureBaseUrl: config.structureBaseUrl });
  return createLambdaEdgeHandler(handler);
}

/** Viewer-request: API keys and quotas, shared across edge locations in DynamoDB. */
export function viewerRequestHandler(config: EdgeBundleConfig) {
  if (!config.access) return async () => { throw new Error('this edge bundle was built without --access: deploy no viewer-request function'); };
  let access: Promise<AccessControl> | null = null;
  const settings = config.access;
  return async (event: CloudFrontRequestEvent) => createViewerRequestHandler(await (access ??= accessControl(settings)))(event);
}

export const handler = originRequestHandler(__ISOATLAS_EDGE_CONFIG__);
export const viewerRequest = viewerRequestHandler(__ISOATLAS_EDGE_CONFIG__);
