// A viewer's request as the CDN answers it: the key gate (the CloudFront Function, at viewer request),
// then the origin-request function (the Lambda@Edge adapter over a handler), the request passed from
// one to the other as CloudFront passes it.
import type { CloudFrontRequestEvent, CloudFrontResultResponse } from '../../edge/adapters/lambda-edge.js';
import { viewerRequest, type LoadedFunction } from './cloudfront-function.js';

/** The request as CloudFront sends it on after the gate: the gate's query object as a query string. */
export function originEvent(out: {
  method: string;
  uri: string;
  querystring: Record<string, { value: string }>;
  headers: Record<string, { value: string }>;
}): CloudFrontRequestEvent {
  const querystring = Object.entries(out.querystring)
    .map(([name, { value }]) => `${name}=${value}`)
    .join('&');
  const headers = Object.fromEntries(
    Object.entries(out.headers).map(([name, { value }]) => [name, [{ key: name, value }]]),
  );
  const config = {
    distributionDomainName: 'd111111abcdef8.cloudfront.net',
    eventType: 'origin-request',
    requestId: 'test',
  };
  return {
    Records: [
      {
        cf: {
          config,
          request: { clientIp: '203.0.113.178', method: out.method, uri: out.uri, querystring, headers },
        },
      },
    ],
  };
}

/** What the gate made of a viewer's request for `target` (a path and query), and the origin-request
 * function's answer to it (undefined when the gate answered itself). */
export async function throughCdn(
  gate: LoadedFunction,
  edge: (event: CloudFrontRequestEvent) => Promise<unknown>,
  target: string,
): Promise<{ out: any; answer?: CloudFrontResultResponse; header: (name: string) => string | null }> {
  const url = new URL(target, 'http://atlas.test');
  const querystring = Object.fromEntries(
    [...url.searchParams].map(([name, value]) => [name, { value: encodeURIComponent(value) }]),
  );
  const out = await gate.handler(viewerRequest({ uri: url.pathname, querystring }));
  const answer =
    out.statusCode === undefined ? ((await edge(originEvent(out))) as CloudFrontResultResponse) : undefined;
  return { out, answer, header: (name) => answer?.headers[name]?.[0]?.value ?? null };
}
