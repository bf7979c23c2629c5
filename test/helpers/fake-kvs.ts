// A CloudFront KeyValueStore data-plane API for tests (DescribeKeyValueStore, ListKeys, GetKey,
// PutKey, UpdateKeys with ETag conditions), in memory over HTTP, so the real SDK client, its request
// serialization and its SigV4A signer run end to end. It records whether each request was SigV4A-signed.
// Its size is key + value bytes plus `entryOverhead` per entry; past `sizeLimit`, a write is refused
// with ServiceQuotaExceededException, as a whole (AWS: UpdateKeys is all or nothing).
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
  /** Resolves when the `n`th UpdateKeys call from now arrives, which is then never answered. */
  holdUpdate(n: number): Promise<void>;
  close(): Promise<void>;
}

export async function startFakeKvs(
  arn: string,
  options: { entryOverhead?: number; sizeLimit?: number } = {},
): Promise<FakeKvs> {
  const entries = new Map<string, string>();
  let version = 1;
  let conflicts = 0;
  let updates = 0;
  let hold: { n: number; arrived: () => void } | null = null;
  // A listing's order, taken on its first page (sorting every page of a large store is slow).
  let listing: string[] = [];
  const requests: FakeKvs['requests'] = [];
  const base = `/key-value-stores/${encodeURIComponent(arn)}`;
  const send = (res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  };
  const fail = (res: ServerResponse, status: number, type: string, message: string) =>
    send(res, status, { Message: message }, { 'x-amzn-errortype': type });
  const sizeOf = (map: Map<string, string>) =>
    [...map].reduce((n, [k, v]) => n + Buffer.byteLength(k) + Buffer.byteLength(v) + (options.entryOverhead ?? 0), 0);
  const stats = () => ({ ItemCount: entries.size, TotalSizeInBytes: sizeOf(entries) });
  const overLimit = (res: ServerResponse, next: Map<string, string>) => {
    if (options.sizeLimit === undefined || sizeOf(next) <= options.sizeLimit) return false;
    fail(res, 402, 'ServiceQuotaExceededException', 'Limit exceeded for the key value store size');
    return true;
  };
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
      const start = Number(url.searchParams.get('NextToken') ?? 0);
      if (start === 0) listing = [...entries.keys()].sort();
      const max = Number(url.searchParams.get('MaxResults') ?? 50);
      const page = listing.slice(start, start + max).filter((key) => entries.has(key));
      return send(res, 200, {
        Items: page.map((Key) => ({ Key, Value: entries.get(Key) })),
        ...(start + max < listing.length ? { NextToken: String(start + max) } : {}),
      });
    }
    if (req.method === 'POST' && rest === '/keys') {
      updates++;
      if (hold && updates === hold.n) return hold.arrived();
      if (!conditional(req, res)) return;
      const next = new Map(entries);
      for (const d of body.Deletes ?? []) next.delete(d.Key);
      for (const p of body.Puts ?? []) next.set(p.Key, p.Value);
      if (overLimit(res, next)) return;
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
      if (overLimit(res, new Map(entries).set(key, body.Value))) return;
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
    holdUpdate: (n) =>
      new Promise<void>((arrived) => {
        hold = { n: updates + n, arrived };
      }),
    close: () =>
      new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
