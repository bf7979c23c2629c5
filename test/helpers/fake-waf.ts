// The two WAF API calls `keys publish --waf-tier` makes (GetRegexPatternSet, UpdateRegexPatternSet
// with lock tokens), in memory over HTTP (JSON 1.1, as the SDK speaks it), for tests.
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface FakeWaf {
  url: string;
  sets: Map<string, { name: string; patterns: string[]; lock: number }>;
  close(): Promise<void>;
}

export async function startFakeWaf(sets: { id: string; name: string }[]): Promise<FakeWaf> {
  const state = new Map(sets.map((s) => [s.id, { name: s.name, patterns: ['^isoatlas-no-keys-in-this-tier$'], lock: 1 }]));
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}');
    const action = String(req.headers['x-amz-target']).split('.')[1];
    const send = (status: number, out: unknown) => {
      res.writeHead(status, { 'content-type': 'application/x-amz-json-1.1' });
      res.end(JSON.stringify(out));
    };
    const set = state.get(body.Id);
    if (!set || set.name !== body.Name || body.Scope !== 'CLOUDFRONT') return send(400, { __type: 'WAFNonexistentItemException', Message: `no set ${body.Name}/${body.Id}` });
    if (action === 'GetRegexPatternSet') {
      return send(200, { RegexPatternSet: { Name: set.name, Id: body.Id, RegularExpressionList: set.patterns.map((RegexString) => ({ RegexString })) }, LockToken: `lock-${set.lock}` });
    }
    if (action === 'UpdateRegexPatternSet') {
      if (body.LockToken !== `lock-${set.lock}`) return send(400, { __type: 'WAFOptimisticLockException', Message: 'stale lock token' });
      set.patterns = body.RegularExpressionList.map((r: { RegexString: string }) => r.RegexString);
      set.lock++;
      return send(200, { NextLockToken: `lock-${set.lock}` });
    }
    send(400, { __type: 'WAFInvalidOperationException', Message: `unexpected ${action}` });
  });
  await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, sets: state, close: () => new Promise((ok) => server.close(() => ok())) };
}
