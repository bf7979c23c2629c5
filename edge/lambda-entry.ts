// The Lambda@Edge function as deployed: the handler over an origin, behind the CloudFront adapter.
// Lambda@Edge has no environment variables, so the configuration is fixed at bundle time
// (`isoatlas bundle-edge` defines __ISOATLAS_EDGE_CONFIG__). With `access`, API keys and quotas use
// DynamoDB tables shared by every edge location, failing open to per-instance limits.
import { DynamoDBClient } from '@aws-sdk/client-dynamodb';
import { createHandler, type Handler } from './handler.js';
import { HttpOrigin } from './origins/http.js';
import { createLambdaEdgeHandler } from './adapters/lambda-edge.js';
import { AccessControl } from './access/control.js';
import { resolveAccessConfig } from './access/config.js';
import { importServerSecret } from './access/key-format.js';
import { DynamoQuotaStore } from './access/stores/dynamodb.js';
import { DynamoKeyRegistry } from './access/stores/dynamodb-keys.js';
import { FailOpenQuotaStore } from './access/stores/resilient.js';

export interface EdgeBundleConfig {
  originBaseUrl: string;
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

/** Builds the handler once per Lambda instance (the secret import is async), so the alias maps,
 * search index and key cache it loads are kept across invocations. */
export function edgeHandler(config: EdgeBundleConfig) {
  let built: Promise<Handler> | null = null;
  const build = async (): Promise<Handler> => {
    const a = config.access;
    const access = a
      ? new AccessControl({
          config: resolveAccessConfig(a.config),
          store: new FailOpenQuotaStore(new DynamoQuotaStore(new DynamoDBClient({ region: a.region, endpoint: a.endpoint }), a.quotaTable)),
          keys: new DynamoKeyRegistry(new DynamoDBClient({ region: a.region, endpoint: a.endpoint }), a.keysTable),
          secret: await importServerSecret(a.keySecret),
        })
      : undefined;
    return createHandler({ origin: new HttpOrigin(config.originBaseUrl), structureBaseUrl: config.structureBaseUrl, access });
  };
  return createLambdaEdgeHandler(async (request, context) => (await (built ??= build()))(request, context));
}

export const handler = edgeHandler(__ISOATLAS_EDGE_CONFIG__);
