// Adapter: Lambda@Edge origin-request events → the edge handler → CloudFront results. The handler
// serves the request and CloudFront caches the generated response (bodies up to 1 MB there). Access
// is decided before, at viewer request, by the key gate (a CloudFront Function) and WAF.
import { failure, type Handler } from '../handler.js';
import { objectKey } from '../contract/store-layout.js';
import { fileKinds } from '../contract/dispatch.js';
import { REFUSED_TARGET_DETAIL, refusedTarget } from '../contract/targets.js';
import { problem } from '../responses.js';
import { requestUrl } from '../request-url.js';

type CfHeaders = Record<string, { key?: string; value: string }[]>;

export interface CloudFrontRequestEvent {
  Records: {
    cf: {
      config: { distributionDomainName: string; eventType: string; requestId?: string; distributionId?: string };
      request: { clientIp: string; method: string; uri: string; querystring: string; headers: CfHeaders };
    };
  }[];
}

export interface CloudFrontResultResponse {
  status: string;
  statusDescription?: string;
  headers: CfHeaders;
  body?: string;
  bodyEncoding?: 'text' | 'base64';
}

/** Headers CloudFront does not let a function set on a generated response. */
const READ_ONLY = new Set([
  'content-length',
  'transfer-encoding',
  'connection',
  'via',
  'upgrade',
  'keep-alive',
  'proxy-connection',
]);
const TEXTUAL = /^(application\/(json|problem\+json)|text\/|chemical\/x-mmcif)/;

type CfRequest = CloudFrontRequestEvent['Records'][0]['cf']['request'];

function toWebRequest(event: CloudFrontRequestEvent): Request {
  const { request: cf, config } = event.Records[0].cf;
  // The handler reads only the path and query of this URL. Its host is the distribution's: at
  // origin-request the Host header names the origin, and the stack forwards no viewer Host.
  const host = config.distributionDomainName;
  const headers = new Headers();
  for (const [name, values] of Object.entries(cf.headers)) {
    for (const { value } of values) headers.append(name, value);
  }
  return new Request(`https://${host}${cf.uri}${cf.querystring ? `?${cf.querystring}` : ''}`, {
    method: cf.method,
    headers,
  });
}

/** Finds the object a pinned release's structure file is stored as: its sha256, or a problem answer. */
export type ReleaseFileLocator = (request: Request) => Promise<{ sha256: string } | Response>;

export function createLambdaEdgeHandler(handler: Handler, locate?: ReleaseFileLocator) {
  return async function onOriginRequest(event: CloudFrontRequestEvent): Promise<CloudFrontResultResponse | CfRequest> {
    const cf = event.Records[0].cf.request;
    // CloudFront's id of the request (its X-Amz-Cf-Id): a 500 names it, as the function's log does.
    const requestId = event.Records[0].cf.config.requestId;
    const request = toWebRequest(event);
    // Checked as CloudFront passes it: the URL parser resolves `..` and backslashes.
    if (refusedTarget(`${cf.uri}${cf.querystring ? `?${cf.querystring}` : ''}`)) {
      return toCloudFront(problem(request, { status: 400, detail: REFUSED_TARGET_DETAIL }), cf.method);
    }
    // A pinned release's structure file (the dispatch table's structure_file, at its release path)
    // goes from the store to the viewer through CloudFront, whatever its size (a body this function
    // generates is limited to 1 MB): the request is sent on to the bucket with the object's key as
    // its URI, and CloudFront caches the answer under the viewer's URL. Every other path is the
    // handler's, which serves no structure file here.
    if (locate && fileKinds.structure_file.match(requestUrl(request).pathname)?.release != null) {
      const found = await locate(request).catch((err: unknown) => failure(request, err, requestId));
      if (found instanceof Response) return toCloudFront(found, cf.method);
      return { ...cf, uri: `/${objectKey(found.sha256)}`, querystring: '' };
    }
    return toCloudFront(await handler(request, { clientIp: cf.clientIp, requestId }), cf.method);
  };
}

async function toCloudFront(response: Response, method: string): Promise<CloudFrontResultResponse> {
  const out: CfHeaders = {};
  response.headers.forEach((value, name) => {
    if (!READ_ONLY.has(name))
      out[name] = [{ key: name.replace(/(^|-)([a-z])/g, (_, dash, c) => dash + c.toUpperCase()), value }];
  });
  const result: CloudFrontResultResponse = {
    status: String(response.status),
    statusDescription: response.statusText || undefined,
    headers: out,
  };
  if (response.body && method !== 'HEAD') {
    const bytes = Buffer.from(await response.arrayBuffer());
    const textual = TEXTUAL.test(response.headers.get('content-type') ?? '');
    result.body = textual ? bytes.toString('utf8') : bytes.toString('base64');
    result.bodyEncoding = textual ? 'text' : 'base64';
  }
  return result;
}
