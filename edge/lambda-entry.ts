// The Lambda@Edge function as deployed: the handler over an origin, behind the CloudFront adapter.
// Lambda@Edge has no environment variables, so the configuration is fixed at bundle time
// (`isoatlas bundle-edge --origin … --structure-base …` defines __ISOATLAS_EDGE_CONFIG__).
import { createHandler } from './handler.js';
import { HttpOrigin } from './origins/http.js';
import { createLambdaEdgeHandler } from './adapters/lambda-edge.js';

declare const __ISOATLAS_EDGE_CONFIG__: { originBaseUrl: string; structureBaseUrl?: string };

const config = __ISOATLAS_EDGE_CONFIG__;

export const handler = createLambdaEdgeHandler(
  createHandler({ origin: new HttpOrigin(config.originBaseUrl), structureBaseUrl: config.structureBaseUrl }),
);
