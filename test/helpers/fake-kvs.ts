// A CloudFront KeyValueStore data-plane API for tests (DescribeKeyValueStore, ListKeys, GetKey,
// PutKey, UpdateKeys with ETag conditions), in memory over HTTP, so the real SDK client, its request
// serialization and its SigV4A signer run end to end. It records whether each request was SigV4A-signed.
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeKvs {
  url: string;
  entries: Map<string, string>;
  etag(): string;
  /** Requests seen, with their signing algorithm. */
  requests: { method: string; path: string; algorithm: string }[];
  /** Makes the next n conditional writes fail with ConflictException (as if someone wrote first). */
  conflictNext(n: number): void;
  close(): Promise<void>;
}

export async function startFakeKvs(arn: string): Promise<FakeKvs> {
  const entries = new Map<string, string>();
  let version = 1;
  let conflicts = 0;
  const requests: FakeKvs['requests'] = [];
  const base = `/key-value-stores/${encodeURIComponent(arn)}`;
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, type: string, message: string) =>
    send(res, status, { Message: message }, { 'x-amzn-errortype': type });
  const stats = () => ({
    ItemCount: entries.size,
    TotalSizeInBytes: [...entries].reduce((n, [k, v]) => n + k.length + v.length, 0),
  });
  const conditional = (req: IncomingMessage, res: ServerResponse): boolean => {
    if (conflicts > 0) {
      conflicts--;
      version++;
      fail(res, 409, 'ConflictException', 'the store changed');
      return false;
    }
    if (req.headers['if-match'] !== `v${version}`) {
      fail(res, 409, 'ConflictException', `If-Match ${req.headers['if-match']} is not the current ETag v${version}`);
      return false;
    }
    return true;
  };

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = chunks.length ? JSON.parse(Buffer.concat(chunks).toString('utf8')) : {};
    const url = new URL(req.url!, 'http://x');
    const path = url.pathname;
    const auth = String(req.headers.authorization ?? '');
    requests.push({ method: req.method!, path, algorithm: auth.split(' ')[0] });
    if (!path.startsWith(base) && !path.startsWith(`/key-value-stores/${arn}`))
      return fail(res, 404, 'ResourceNotFoundException', `no store at ${path}`);
    const rest = decodeURIComponent(path).slice(`/key-value-stores/${arn}`.length);
    if (req.method === 'GET' && rest === '') {
      return send(
        res,
        200,
        { ...stats(), KvsARN: arn, Created: 1_700_000_000, Status: 'READY' },
        { etag: `v${version}` },
      );
    }
    if (req.method === 'GET' && rest === '/keys') {
      const all = [...entries].sort(([a], [b]) => (a < b ? -1 : 1));
      const start = Number(url.searchParams.get('NextToken') ?? 0);
      const max = Number(url.searchParams.get('MaxResults') ?? 50);
      const page = all.slice(start, start + max);
      return send(res, 200, {
        Items: page.map(([Key, Value]) => ({ Key, Value })),
        ...(start + max < all.length ? { NextToken: String(start + max) } : {}),
      });
    }
    if (req.method === 'POST' && rest === '/keys') {
      if (!conditional(req, res)) return;
      for (const d of body.Deletes ?? []) entries.delete(d.Key);
      for (const p of body.Puts ?? []) entries.set(p.Key, p.Value);
      version++;
      return send(res, 200, stats(), { etag: `v${version}` });
    }
    const key = rest.startsWith('/keys/') ? rest.slice('/keys/'.length) : null;
    if (key !== null && req.method === 'GET') {
      if (!entries.has(key)) return fail(res, 404, 'ResourceNotFoundException', `no key ${key}`);
      return send(res, 200, { Key: key, Value: entries.get(key), ...stats() });
    }
    if (key !== null && req.method === 'PUT') {
      if (!conditional(req, res)) return;
      entries.set(key, body.Value);
      version++;
      return send(res, 200, stats(), { etag: `v${version}` });
    }
    fail(res, 400, 'ValidationException', `unexpected ${req.method} ${path}`);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://localhost:${port}`,
    entries,
    etag: () => `v${version}`,
    requests,
    conflictNext: (n) => {
      conflicts = n;
    },
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}
