// The deployed shape of the edge function: the esbuild bundle of edge/lambda-entry.ts, called with
// CloudFront origin-request events of the documented shape, reading the demo tree through its HTTP
// origin from a plain static file server (standing in for the S3 bucket / CloudFront origin).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import http from 'node:http';
import { createRequire } from 'node:module';
import { mkdirSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { join, normalize } from 'node:path';
import type { AddressInfo } from 'node:net';
import { bundleEdge, EDGE_BUNDLE_BUDGET, type EdgeBundle } from '../build/bundle/edge.js';
import { treePaths } from '../edge/contract/tree.js';
import { createHandler } from '../edge/handler.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { readManifest, readStructureMap } from './helpers/tree.js';
import type { CloudFrontRequestEvent, CloudFrontResultResponse } from '../edge/adapters/lambda-edge.js';
import { validate } from './helpers/schemas.js';
import { issueKey, loadRegistry, readSecret } from '../build/keys/registry.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { kvsEntries } from '../edge/cloudfront/kvs-layout.js';
import { loadCloudFrontFunction, viewerRequest } from './helpers/cloudfront-function.js';

type LambdaHandler = (event: CloudFrontRequestEvent) => Promise<CloudFrontResultResponse>;

let staticServer: http.Server;
let originRequests = 0;
let dir: string;
let bundle: EdgeBundle;
let handler: LambdaHandler;
const tree = () => inject('fixtureTree');

function event(
  uri: string,
  querystring = '',
  method = 'GET',
  extraHeaders: Record<string, string> = {},
): CloudFrontRequestEvent {
  const headers: CloudFrontRequestEvent['Records'][0]['cf']['request']['headers'] = {
    // At origin-request CloudFront sets Host to the origin's domain; the stack forwards no viewer Host.
    host: [{ key: 'Host', value: 'isoatlas-test-bucket.s3.us-east-1.amazonaws.com' }],
    'user-agent': [{ key: 'User-Agent', value: 'curl/8.5.0' }],
  };
  for (const [k, v] of Object.entries(extraHeaders)) headers[k.toLowerCase()] = [{ key: k, value: v }];
  return {
    Records: [
      {
        cf: {
          config: {
            distributionDomainName: 'd111111abcdef8.cloudfront.net',
            distributionId: 'EDFDVBD6EXAMPLE',
            eventType: 'origin-request',
            requestId: 'test',
          },
          request: { clientIp: '203.0.113.178', method, uri, querystring, headers },
        },
      },
    ],
  };
}

const header = (r: CloudFrontResultResponse, name: string) => r.headers[name.toLowerCase()]?.[0]?.value;
const manifestSha = (path: string) => readManifest(tree()).entries.find((e) => e.path === path)!.sha256;

beforeAll(async () => {
  staticServer = http.createServer((req, res) => {
    originRequests += 1;
    const path = normalize(decodeURIComponent(new URL(req.url!, 'http://x').pathname)).replace(/^\/+/, '');
    try {
      const body = readFileSync(join(tree(), path));
      res.writeHead(200).end(body);
    } catch {
      res.writeHead(404).end();
    }
  });
  await new Promise<void>((ok) => staticServer.listen(0, '127.0.0.1', ok));
  const { port } = staticServer.address() as AddressInfo;
  // Inside the project, so the bundle's external @aws-sdk/* resolve from node_modules as they would
  // from the Lambda runtime.
  mkdirSync(join(__dirname, '../.isoatlas'), { recursive: true });
  dir = mkdtempSync(join(__dirname, '../.isoatlas/edge-bundle-'));
  bundle = await bundleEdge({
    outDir: dir,
    originBaseUrl: `http://127.0.0.1:${port}/`,
    structureBaseUrl: 'https://structures.example.org',
  });
  handler = createRequire(import.meta.url)(bundle.file).handler as LambdaHandler;
});

afterAll(async () => {
  await new Promise((ok) => staticServer.close(ok));
  rmSync(dir, { recursive: true, force: true });
});

describe('edge bundle', () => {
  it('is one small CommonJS file within the Lambda@Edge budget', () => {
    expect(bundle.gzipBytes).toBeLessThan(EDGE_BUNDLE_BUDGET);
    expect(bundle.bytes).toBeLessThan(200 * 1024); // handler + MiniSearch; no framework
    expect(typeof handler).toBe('function');
  });
});

describe('Lambda@Edge origin-request adapter', () => {
  it('answers a gene record with the file bytes, CloudFront-shaped headers and the manifest ETag', async () => {
    const r = await handler(event('/api/v1/genes/prr5'));
    expect(r.status).toBe('200');
    expect(r.bodyEncoding).toBe('text');
    const file = readFileSync(join(tree(), treePaths.gene('ENSG00000186654')), 'utf8');
    expect(r.body).toBe(file);
    expect(r.headers['content-type']).toEqual([{ key: 'Content-Type', value: 'application/json; charset=utf-8' }]);
    expect(header(r, 'etag')).toBe(`"${manifestSha(treePaths.gene('ENSG00000186654'))}"`);
    expect(header(r, 'access-control-allow-origin')).toBe('*');
    expect(r.headers['content-length']).toBeUndefined(); // read-only for generated responses
  });

  it('passes the query string through', async () => {
    const r = await handler(event('/api/v1/search', 'query=PRR5&limit=2'));
    expect(r.status).toBe('200');
    const body = JSON.parse(r.body!);
    expect(validate('SearchResults', body)).toEqual([]);
    expect(body.items).toHaveLength(2);
    expect(body.items[0]).toMatchObject({ type: 'gene', symbol: 'PRR5', match: 'exact' });
  });

  it('searches by full name as the handler of `isoatlas serve` does, hit for hit', async () => {
    const local = createHandler({ origin: new LocalTreeOrigin(tree()) });
    const queries = [
      'mitogen-activated protein kinase 1',
      'mitogen activated protein kinase',
      'proline rich 5',
      'proline rich',
      'kinase',
      'protein 2',
      'MAPK1 kinase',
      'MPAK1',
    ];
    for (const query of queries) {
      const qs = `query=${encodeURIComponent(query)}&limit=25`;
      const cdn = await handler(event('/api/v1/search', qs));
      expect(cdn.status, query).toBe('200');
      const own = await local(new Request(`http://atlas.test/api/v1/search?${qs}`));
      expect(JSON.parse(cdn.body!), query).toEqual(await own.json());
    }
    const first = JSON.parse((await handler(event('/api/v1/search', `query=${encodeURIComponent(queries[0])}`))).body!);
    expect(first.items[0]).toMatchObject({
      symbol: 'MAPK1',
      name: 'mitogen-activated protein kinase 1',
      match: 'exact',
    });
  });

  it('answers 304 to a matching If-None-Match and nothing for HEAD', async () => {
    const etag = `"${manifestSha(treePaths.isoform('ENST00000006251.11'))}"`;
    const notModified = await handler(event('/api/v1/isoforms/PRR5-201', '', 'GET', { 'If-None-Match': etag }));
    expect(notModified.status).toBe('304');
    expect(notModified.body).toBeUndefined();
    const head = await handler(event('/api/v1/isoforms/PRR5-201', '', 'HEAD'));
    expect(head.status).toBe('200');
    expect(head.body).toBeUndefined();
    expect(header(head, 'etag')).toBe(etag);
  });

  it('redirects structures into the configured structure base', async () => {
    const [transcriptId, entry] = Object.entries(readStructureMap(tree()))[0];
    const r = await handler(event(`/api/v1/isoforms/${transcriptId}/structure`));
    expect(r.status).toBe('307');
    expect(header(r, 'location')).toBe(`https://structures.example.org/${entry.path}`);
    expect(r.body).toBeUndefined();
  });

  it('turns bad input into problem+json', async () => {
    const notFound = await handler(event('/api/v1/genes/NOT_A_GENE'));
    expect(notFound.status).toBe('404');
    expect(header(notFound, 'content-type')).toBe('application/problem+json; charset=utf-8');
    expect(validate('Problem', JSON.parse(notFound.body!))).toEqual([]);
    const badLimit = await handler(event('/api/v1/search', 'query=x&limit=200'));
    expect(badLimit.status).toBe('400');
    expect(JSON.parse(badLimit.body!).detail).toContain('maximum of 25');
    const post = await handler(event('/api/v1/genes/PRR5', '', 'POST'));
    expect(post.status).toBe('405');
    expect(header(post, 'allow')).toBe('GET, HEAD, OPTIONS');
  });

  it('loads edge data and verified files once per instance, not once per request', async () => {
    await handler(event('/api/v1/isoforms/ENST00000006251'));
    const before = originRequests;
    await handler(event('/api/v1/isoforms/ENST00000006251'));
    await handler(event('/api/v1/isoforms/PRR5-201'));
    expect(originRequests - before).toBe(0); // alias shard, manifest shard and the body are cached
    await handler(event('/api/v1/isoforms/ENST00000006251/domains'));
    // A new file: the file itself, and its manifest shard unless an earlier file shared it.
    expect(originRequests - before).toBeGreaterThanOrEqual(1);
    expect(originRequests - before).toBeLessThanOrEqual(2);
  });

  it('answers 502 with Retry-After when the origin is down, never 500', async () => {
    await new Promise((ok) => staticServer.close(ok));
    staticServer.closeAllConnections();
    // A file this instance has not verified yet (those it has are still served from its cache).
    const cached = await handler(event('/api/v1/isoforms/PRR5-201/domains'));
    expect(cached.status).toBe('200');
    const r = await handler(event('/api/v1/isoforms/PRR5-201/neoantigens'));
    expect(r.status).toBe('502');
    expect(header(r, 'retry-after')).toBe('5');
    expect(JSON.parse(r.body!).detail).not.toMatch(/127\.0\.0\.1|ECONNREFUSED/); // no internals leak
    await new Promise<void>((ok) => staticServer.listen(0, '127.0.0.1', ok)); // for afterAll
  });
});

describe('CloudFront at viewer request, then the origin: the key gate in front of the bundle (arrangement B)', () => {
  let key: string;
  let gate: ReturnType<typeof loadCloudFrontFunction>;
  /** What CloudFront does: the key gate on the viewer request, then (if it passed) the origin request. */
  const through = async (
    uri: string,
    authorization?: string,
  ): Promise<CloudFrontResultResponse | { statusCode: number }> => {
    const out = await gate.handler(viewerRequest({ uri, authorization }));
    if (out.statusCode) return out;
    expect(out.headers.authorization).toBeUndefined(); // the key goes no further than the gate
    const headers = Object.fromEntries(
      Object.entries(out.headers as Record<string, { value: string }>).map(([k, v]) => [k, v.value]),
    );
    return handler(event(out.uri, '', out.method, headers));
  };

  beforeAll(async () => {
    const keysDir = mkdtempSync(join(dir, 'keys-'));
    key = (await issueKey(keysDir, { name: 'Edge', affiliation: 'Lab', use: 'bundle test', tier: 'standard' })).key;
    const store = kvsEntries(loadRegistry(keysDir).keys, readSecret(keysDir, { create: false })!);
    gate = loadCloudFrontFunction(keyGateCode(keyGateSettings(resolveAccessConfig({}, 'key-required'))), store);
  });

  it('refuses a request without a key before the origin, and serves a keyed one from it', async () => {
    const none = (await through('/api/v1/genes/PRR5')) as { statusCode: number };
    expect(none.statusCode).toBe(401);
    const keyed = (await through('/api/v1/genes/PRR5', `Bearer ${key}`)) as CloudFrontResultResponse;
    expect(keyed.status).toBe('200');
    expect(JSON.parse(keyed.body!).symbol).toBe('PRR5');
  });
});
