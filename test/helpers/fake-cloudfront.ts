// CloudFront's CreateInvalidation for tests, in memory over HTTP, so the real SDK client and its
// request serialization run end to end. It records each invalidation's distribution and paths.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeCloudFront {
  url: string;
  invalidations: { distributionId: string; paths: string[] }[];
  close(): Promise<void>;
}

export async function startFakeCloudFront(): Promise<FakeCloudFront> {
  const invalidations: FakeCloudFront['invalidations'] = [];
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString('utf8');
    const m = /^\/2020-05-31\/distribution\/([^/]+)\/invalidation$/.exec(req.url ?? '');
    if (req.method !== 'POST' || !m) {
      res.writeHead(400, { 'content-type': 'text/xml' });
      return res.end(
        `<ErrorResponse><Error><Code>InvalidArgument</Code><Message>unexpected ${req.method} ${req.url}</Message></Error></ErrorResponse>`,
      );
    }
    const paths = [...body.matchAll(/<Path>([^<]*)<\/Path>/g)].map((p) => p[1]);
    invalidations.push({ distributionId: decodeURIComponent(m[1]), paths });
    const id = `I${invalidations.length}`;
    res.writeHead(201, { 'content-type': 'text/xml', location: `https://cloudfront.amazonaws.com${req.url}/${id}` });
    res.end(
      `<?xml version="1.0" encoding="UTF-8"?><Invalidation xmlns="http://cloudfront.amazonaws.com/doc/2020-05-31/"><Id>${id}</Id><Status>InProgress</Status>` +
        `<CreateTime>${new Date().toISOString()}</CreateTime><InvalidationBatch>${body.replace(/^[\s\S]*?<InvalidationBatch[^>]*>|<\/InvalidationBatch>[\s\S]*$/g, '')}</InvalidationBatch></Invalidation>`,
    );
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    invalidations,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
