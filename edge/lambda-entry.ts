// The Lambda@Edge function as deployed: `handler` (origin-request: serves, and CloudFront caches its
// answers). API keys and limits are not its job: the key gate (a CloudFront Function) and WAF decide
// at viewer request, before the cache. Lambda@Edge has no environment variables, so the
// configuration is fixed at bundle time (`isoatlas bundle-edge` defines __ISOATLAS_EDGE_CONFIG__).
import { createHandler, releasesOf } from './handler.js';
import { isVersioned } from './origin.js';
import { locateStructureFile } from './endpoints/structure-redirect.js';
import { HttpOrigin } from './origins/http-origin.js';
import { StoreOrigin } from './origins/store-origin.js';
import { S3RawOrigin } from './origins/s3.js';
import { S3Client } from '@aws-sdk/client-s3';
import type { Origin, VersionedOrigin } from './origin.js';
import { createLambdaEdgeHandler } from './adapters/lambda-edge.js';

export interface EdgeBundleConfig {
  /** A tree below a base URL; with `published`, a published store (current.json, releases.json, objects/). */
  originBaseUrl?: string;
  published?: boolean;
  /** A published store read with the S3 API (the CDN deployment: the function's role may read it). */
  s3?: { bucket: string; region: string; prefix?: string; endpoint?: string };
  structureBaseUrl?: string;
}

declare const __ISOATLAS_EDGE_CONFIG__: EdgeBundleConfig;

function originOf(config: EdgeBundleConfig): Origin | VersionedOrigin {
  if (config.s3) {
    const { bucket, region, prefix, endpoint } = config.s3;
    const client = new S3Client({ region, endpoint, forcePathStyle: Boolean(endpoint) });
    return new StoreOrigin(new S3RawOrigin(client, bucket, prefix ?? ''));
  }
  if (!config.originBaseUrl) throw new Error('edge bundle config names no origin (originBaseUrl or s3)');
  const http = new HttpOrigin(config.originBaseUrl);
  return config.published ? new StoreOrigin(http) : http;
}

/** Origin-request: serves (CloudFront caches what it answers). Built once per Lambda instance,
 * so the alias maps and search index it loads are kept across invocations. */
export function originRequestHandler(config: EdgeBundleConfig) {
  const origin = originOf(config);
  const releases = releasesOf({ origin });
  const handler = createHandler({ origin, structureBaseUrl: config.structureBaseUrl }, releases);
  // A store's pinned structure files are fetched by CloudFront from the object the release's manifest
  // names; the handler answers every other path of the dispatch table, none of its system paths
  // (those are `isoatlas serve`'s) and no structure or store file (the bucket has them).
  return createLambdaEdgeHandler(
    handler,
    isVersioned(origin) ? (request) => locateStructureFile(request, releases) : undefined,
  );
}

export const handler = originRequestHandler(__ISOATLAS_EDGE_CONFIG__);
