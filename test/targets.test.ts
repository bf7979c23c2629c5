// One notion of a refused request target (edge/contract/targets.ts), and no key character in what
// the edge echoes: the checker's verdicts, the server's 400 for the raw target before any URL
// parser resolves it, Lambda@Edge's, and redaction that runs before any cut.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { REFUSED_TARGET_DETAIL, refusedTarget } from '../edge/contract/targets.js';
import { createHandler } from '../edge/handler.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { createNodeServer } from '../edge/adapters/node-http.js';
import { createLambdaEdgeHandler } from '../edge/adapters/lambda-edge.js';
import { generateKey } from '../edge/access/key-format.js';
import { redactKeys } from '../edge/access/redaction.js';
import { routes } from '../edge/contract/routes.js';
import { parseQuery, type RequestProblem } from '../edge/router.js';
import { ACCEPTED, REFUSED, leaksSecret } from './helpers/targets.js';

describe('refused targets', () => {
  it('refuses what a URL parser would resolve or the route table cannot hold, and nothing else', () => {
    // Not origin-form (Node's parser refuses this one before the check; nginx too).
    expect(refusedTarget('api/v1/release')).toBe(true);
    expect(REFUSED.filter((t) => !refusedTarget(t))).toEqual([]);
    expect(ACCEPTED.filter((t) => refusedTarget(t))).toEqual([]);
  });

  describe('the server, before any URL parser', () => {
    let server: http.Server;
    let port: number;
    beforeAll(async () => {
      server = createNodeServer(createHandler({ origin: new LocalTreeOrigin(inject('fixtureTree')) }));
      await new Promise<void>((ok) => server.listen(0, '127.0.0.1', ok));
      port = (server.address() as AddressInfo).port;
    });
    afterAll(() => new Promise<void>((ok) => server.close(() => ok())));

    const get = (target: string, method = 'GET') =>
      new Promise<{ status: number; type: string | undefined; body: string }>((resolve, reject) => {
        const req = http.request(
          { host: '127.0.0.1', port, path: target, method, headers: { Connection: 'close' } },
          (res) => {
            let body = '';
            res.setEncoding('utf8').on('data', (c: string) => (body += c));
            res.on('end', () => resolve({ status: res.statusCode!, type: res.headers['content-type'], body }));
          },
        );
        req.on('error', reject);
        req.end();
      });

    it('answers each refused target 400 problem+json with the one detail', async () => {
      for (const target of REFUSED) {
        const r = await get(target, target === '*' ? 'OPTIONS' : 'GET');
        expect(r.status, target).toBe(400);
        expect(r.type).toBe('application/problem+json; charset=utf-8');
        expect(JSON.parse(r.body).detail, target).toBe(REFUSED_TARGET_DETAIL);
      }
    });

    it('no longer resolves dot segments: /api/v1/genes/.. is not the root document', async () => {
      const root = await get('/api/v1/');
      expect(root.status).toBe(200);
      for (const target of [
        '/api/v1/genes/..',
        '/api/v1/genes/%2e%2e',
        '/api/v1/genes/PRR5/..',
        '/api/v1/x/../release',
      ])
        expect((await get(target)).status, target).toBe(400);
      for (const target of ACCEPTED.filter((t) => t.startsWith('/api/v1/genes/')))
        expect((await get(target)).status, target).not.toBe(400);
    });
  });

  it('Lambda@Edge refuses the same URIs', async () => {
    const handler = createLambdaEdgeHandler(createHandler({ origin: new LocalTreeOrigin(inject('fixtureTree')) }));
    const event = (uri: string, querystring = '') => ({
      Records: [
        {
          cf: {
            config: { distributionDomainName: 'd.test', eventType: 'origin-request' },
            request: { clientIp: '203.0.113.1', method: 'GET', uri, querystring, headers: {} },
          },
        },
      ],
    });
    for (const uri of ['/api/v1/genes/..', '/api/v1/genes/a%2Fb', '/x\\..\\api/v1/release']) {
      const r = (await handler(event(uri))) as { status: string; body?: string };
      expect(r.status, uri).toBe('400');
      expect(JSON.parse(r.body!).detail).toBe(REFUSED_TARGET_DETAIL);
    }
    expect(((await handler(event('/api/v1/genes/PRR5'))) as { status: string }).status).toBe('200');
  });
});

describe('no key character where client text is cut', () => {
  const { key } = generateKey('s');
  const start = key.indexOf('_', 'isoatlas_'.length) + 1; // the secret's first character
  const secret = key.slice(start);

  it('redactKeys removes the start of a key too, and a key encoded once or twice', () => {
    for (let cut = start + 1; cut <= key.length; cut++)
      expect(leaksSecret(redactKeys(`x${key.slice(0, cut)}`), secret), String(cut)).toBe(false);
    expect(redactKeys(`a ${key.slice(0, start + 1)}`)).toBe('a isoatlas_[redacted]');
    // A legacy key (an id without a tier letter) too.
    const legacy = generateKey(null).key;
    expect(redactKeys(`a ${legacy}`)).toBe('a isoatlas_[redacted]');
    expect(leaksSecret(redactKeys(key.toUpperCase()), secret.toUpperCase())).toBe(false);
    const once = key.replace(/_/g, '%5F');
    const twice = key.replace(/_/g, '%255f');
    for (const text of [key, once, twice, `/api/v1/genes/${once}?x=${twice}`])
      expect(leaksSecret(redactKeys(text), secret)).toBe(false);
    expect(redactKeys('/api/v1/genes/PRR5?query=isoatlas')).toBe('/api/v1/genes/PRR5?query=isoatlas');
  });

  it('a problem from the router holds no secret character wherever the key sits in a name or value', () => {
    const route = (id: string) => routes.find((r) => r.id === id)!;
    const problems: RequestProblem[] = [];
    for (let at = 0; at < 60; at++) {
      for (const [id, query] of [
        ['gene', `${'x'.repeat(at)}${key}=1`],
        ['geneIsoforms', `limit=${'1'.repeat(at)}${key}`],
        ['search', `query=${'q'.repeat(at)}${key}${'q'.repeat(100)}`],
      ] as const) {
        try {
          parseQuery(route(id), new URLSearchParams(query));
        } catch (err) {
          problems.push(err as RequestProblem);
        }
      }
    }
    expect(problems.length).toBeGreaterThan(150);
    for (const p of problems) {
      // Not printed when it fails: it would hold the key.
      expect(leaksSecret(p.message, secret), 'a detail').toBe(false);
      expect(leaksSecret(p.parameter ?? '', secret), 'a parameter').toBe(false);
    }
  });
});
