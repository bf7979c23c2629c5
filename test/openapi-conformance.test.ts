// The rendered openapi.json is the whole contract: the document is valid OpenAPI 3.1 (checked by
// @seriousme/openapi-schema-validator against the official schema), and real answers of the edge
// handler over the demo tree — every status the API gives, 401 and 429 included — are declared for
// their operation, with bodies and headers that validate against it (openapi-backend, not the
// generator that wrote the document).
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { OpenAPIBackend } from 'openapi-backend';
import { Validator } from '@seriousme/openapi-schema-validator';
// The document's formats (date, uri) are checked, not ignored.
import addFormats from 'ajv-formats';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { OriginError, type Origin } from '../edge/origin.js';
import { AccessControl } from '../edge/access/control.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { importServerSecret } from '../edge/access/key-format.js';
import { MemoryQuotaStore } from '../edge/access/stores/memory.js';
import { FileKeyRegistry } from '../edge/access/stores/key-file.js';
import { issueKey, readSecret, registryPath } from '../build/keys/registry.js';
import { PATH_SEGMENT_PATTERN, routes, type RouteId } from '../edge/contract/routes.js';
import { API_PREFIX, treePaths } from '../edge/contract/tree.js';
import { validate } from './helpers/schemas.js';
import type { SchemaName } from '../edge/contract/schemas.js';

const BASE = 'http://atlas.test';
let tree: string;
let doc: Record<string, any>;
let api: OpenAPIBackend;
let keysDir: string;
const seen = new Map<RouteId, Set<number>>();

interface Answer {
  status: number;
  headers: Record<string, string>;
  body: unknown;
}

async function ask(handler: Handler, path: string, init: RequestInit = {}): Promise<Answer> {
  const res = await handler(new Request(BASE + API_PREFIX + path, init), { clientIp: '192.0.2.1' });
  const text = await res.text();
  const headers: Record<string, string> = {};
  res.headers.forEach((value, name) => (headers[name] = value));
  return { status: res.status, headers, body: text ? JSON.parse(text) : undefined };
}

/** Checks one answer against the document: its status is declared for the operation, and its body
 * and headers validate against what is declared there. */
function conforms(operation: RouteId, answer: Answer): void {
  const op = api.getOperation(operation)!;
  const what = `${operation} → ${answer.status} ${JSON.stringify(answer.body)?.slice(0, 300)}`;
  expect(Object.keys(op.responses ?? {}), what).toContain(String(answer.status));
  const declared = (op.responses as Record<string, any>)[String(answer.status)];
  const types = Object.keys(declared.content ?? {});
  if (answer.body === undefined)
    expect(types.length === 0 || answer.status === 304 || answer.status === 307, what).toBe(true);
  else {
    const type = answer.headers['content-type'].split(';')[0];
    expect(types, what).toContain(type);
    // openapi-backend checks a body against the status's application/json schema only (a 429 has one
    // for the CDN's WAF); a body of another type is checked against its own media type's schema.
    if (type === 'application/json')
      expect(api.validateResponse(answer.body, op, answer.status).errors ?? [], what).toEqual([]);
    else expect(validate(declaredSchema(operation, answer.status, type), answer.body), what).toEqual([]);
  }
  // Every header the document declares for this answer, when present, has the declared type; the
  // required ones are present.
  const headers = api.validateResponseHeaders(answer.headers, op, { statusCode: answer.status });
  expect(headers.errors ?? [], what).toEqual([]);
  for (const [name, header] of Object.entries<any>(declared.headers ?? {})) {
    if (header.required) expect(answer.headers[name.toLowerCase()], `${what}: header ${name}`).toBeDefined();
  }
  if (!seen.has(operation)) seen.set(operation, new Set());
  seen.get(operation)!.add(answer.status);
}

/** The name of the schema the document declares for an operation's answer of this status and type. */
function declaredSchema(operation: RouteId, status: number, type: string): SchemaName {
  const path = routes.find((r) => r.id === operation)!.path;
  let response = doc.paths[path].get.responses[String(status)];
  if (response.$ref) response = doc.components.responses[response.$ref.split('/').pop()];
  const ref: string | undefined = response.content?.[type]?.schema?.$ref;
  expect(ref, `${operation} ${status} ${type}`).toBeDefined();
  return ref!.split('/').pop() as SchemaName;
}

beforeAll(async () => {
  tree = inject('fixtureTree');
  doc = JSON.parse(readFileSync(join(tree, treePaths.openapi), 'utf8'));
  // quick: openapi-backend's own check of the document knows OpenAPI 3.0 only; the document is
  // checked against the 3.1 schema by the first test below.
  api = new OpenAPIBackend({
    definition: structuredClone(doc) as any,
    quick: true,
    strict: true,
    customizeAjv: (ajv) => (addFormats.default(ajv), ajv),
  });
  await api.init();
  keysDir = mkdtempSync(join(tmpdir(), 'isoatlas-openapi-keys-'));
});
afterAll(() => rmSync(keysDir, { recursive: true, force: true }));

describe('the document', () => {
  it('is valid OpenAPI 3.1', async () => {
    const result = await new Validator().validate(structuredClone(doc) as any);
    expect(result.errors ?? [], JSON.stringify(result.errors)?.slice(0, 2000)).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it('lists every route of the contract, with every status each can answer', () => {
    for (const route of routes) {
      const op = doc.paths[route.path]?.get;
      expect(op, route.path).toBeDefined();
      const statuses = Object.keys(op.responses);
      const expected = [route.status === 307 ? '307' : '200', '400', '401', '404', '405', '429', '502', '503', '504'];
      if (route.status === 200) expected.push('304');
      if (route.id === 'gene' || route.id === 'geneIsoforms') expected.push('409');
      expect(statuses.sort(), route.id).toEqual(expected.sort());
    }
  });

  it('describes the bearer scheme of both arrangements, optional by default', () => {
    const scheme = doc.components.securitySchemes.bearerKey;
    expect(scheme).toMatchObject({ type: 'http', scheme: 'bearer' });
    expect(scheme.description).toMatch(/Arrangement A/);
    expect(scheme.description).toMatch(/Arrangement B/);
    expect(doc.security).toEqual([{}, { bearerKey: [] }]);
  });

  it('gives path parameters the pattern the router enforces, and examples from the release', () => {
    for (const route of routes) {
      for (const p of doc.paths[route.path].get.parameters.filter((x: any) => x.in === 'path')) {
        expect(p.schema.pattern).toBe(PATH_SEGMENT_PATTERN);
        expect(new RegExp(p.schema.pattern, 'u').test(p.example)).toBe(true);
      }
    }
    const gene = doc.paths['/genes/{symbol}'].get.responses['200'].content['application/json'].example;
    expect(gene.symbol).toBe(doc.paths['/genes/{symbol}'].get.parameters[0].example);
    expect(
      doc.paths['/isoforms/{transcript_id}/domains'].get.responses['200'].content['application/json'].example.items,
    ).toBeDefined();
  });
});

describe('real answers conform to it', () => {
  let open: Handler;
  beforeAll(() => {
    open = createHandler({ origin: new LocalOrigin(tree), serveStructureFiles: true });
  });

  it('200 and 304 on every file-backed route, 307 for a structure', async () => {
    const symbol = doc.paths['/genes/{symbol}'].get.parameters[0].example as string;
    const transcript = doc.paths['/isoforms/{transcript_id}'].get.parameters[0].example as string;
    const asks: [RouteId, string][] = [
      ['root', '/'],
      ['release', '/release'],
      ['openapi', '/openapi.json'],
      ['gene', `/genes/${symbol}`],
      ['geneIsoforms', `/genes/${symbol}/isoforms?limit=1`],
      ['isoform', `/isoforms/${transcript}`],
      ['domains', `/isoforms/${transcript}/domains`],
      ['neoantigens', `/isoforms/${transcript}/neoantigens?limit=3`],
      ['search', `/search?query=${symbol.slice(0, 3)}`],
    ];
    for (const [id, path] of asks) {
      const ok = await ask(open, path);
      expect(ok.status, path).toBe(200);
      conforms(id, ok);
      conforms(id, await ask(open, path, { headers: { 'If-None-Match': ok.headers.etag } }));
    }
    const page = await ask(open, `/genes/${symbol}/isoforms?limit=1`);
    if (page.headers.link) conforms('geneIsoforms', page);
    // A structure: the first isoform that has one.
    const index = JSON.parse(readFileSync(join(tree, treePaths.edgeIndex), 'utf8'));
    const shard = JSON.parse(readFileSync(join(tree, treePaths.structureMap(0)), 'utf8'));
    const id =
      Object.keys(shard)[0] ??
      Object.keys(JSON.parse(readFileSync(join(tree, treePaths.structureMap(index.structures.shards - 1)), 'utf8')))[0];
    const redirect = await ask(open, `/isoforms/${id}/structure`);
    expect(redirect.status).toBe(307);
    conforms('structure', redirect);
  });

  it('409, 400, 404 and 405 as problem+json', async () => {
    const shared = Object.entries(
      JSON.parse(readFileSync(join(tree, treePaths.geneAliases(0)), 'utf8')) as Record<string, unknown>,
    ).find(([, v]) => Array.isArray(v));
    if (shared) {
      const choices = await ask(open, `/genes/${shared[0]}`);
      expect(choices.status).toBe(409);
      conforms('gene', choices);
    }
    for (const [id, path] of [
      ['geneIsoforms', '/genes/PRR5/isoforms?limit=0'],
      ['search', '/search'],
      ['release', '/release?x=1'],
      ['isoform', '/isoforms/a%2Fb'],
    ] as [RouteId, string][]) {
      const bad = await ask(open, path);
      expect(bad.status, path).toBe(400);
      conforms(id, bad);
    }
    conforms('gene', await ask(open, '/genes/NO-SUCH-GENE'));
    conforms('structure', await ask(open, '/isoforms/NO-SUCH-ISOFORM/structure'));
    const post = await ask(open, '/release', { method: 'POST' });
    expect(post.status).toBe(405);
    conforms('release', post);
  });

  it('401 and 429 with keys required, and RateLimit headers on what is served', async () => {
    const key = (await issueKey(keysDir, { name: 'OpenAPI', affiliation: 'Lab', use: 'conformance', tier: 'standard' }))
      .key;
    const secret = await importServerSecret(readSecret(keysDir, { create: false })!);
    const config = resolveAccessConfig(
      { key_required: { per_ip: { per_minute: 1000 }, tiers: { standard: { per_minute: 2, per_day: 100 } } } },
      'key-required',
    );
    const access = new AccessControl({
      config,
      store: new MemoryQuotaStore(),
      keys: new FileKeyRegistry(registryPath(keysDir)),
      secret,
    });
    const keyed = createHandler({ origin: new LocalOrigin(tree), access });
    const missing = await ask(keyed, '/release');
    expect(missing.status).toBe(401);
    conforms('release', missing);
    const wrong = await ask(keyed, '/genes/PRR5', {
      headers: { Authorization: 'Bearer isoatlas_aaaaaaaa_not-a-real-key-at-all-000000' },
    });
    expect(wrong.status).toBe(401);
    conforms('gene', wrong);
    const auth = { headers: { Authorization: `Bearer ${key}` } };
    const statuses: number[] = [];
    for (let i = 0; i < 3; i++) {
      const answer = await ask(keyed, '/release', auth);
      statuses.push(answer.status);
      conforms('release', answer);
      if (answer.status === 200) expect(answer.headers['ratelimit-remaining']).toBeDefined();
    }
    expect(statuses).toEqual([200, 200, 429]);
  });

  it('502, 503 and 504 when the storage fails', async () => {
    for (const [kind, status] of [
      ['unavailable', 502],
      ['overloaded', 503],
      ['timeout', 504],
    ] as const) {
      const failing: Origin = {
        description: 'failing',
        read: async () => Promise.reject(new OriginError('storage failed', kind)),
      };
      const answer = await ask(createHandler({ origin: failing }), '/genes/PRR5');
      expect(answer.status).toBe(status);
      conforms('gene', answer);
    }
  });

  it('would catch an answer the document does not allow', () => {
    const json = { 'content-type': 'application/json; charset=utf-8' };
    expect(() => conforms('gene', { status: 418, headers: json, body: {} })).toThrow();
    expect(() => conforms('gene', { status: 200, headers: json, body: { symbol: 'PRR5' } })).toThrow();
    expect(() =>
      conforms('release', {
        status: 429,
        headers: { 'content-type': 'application/problem+json', 'retry-after': 'soon' },
        body: { type: 'about:blank', title: 'x', status: 429, detail: 'x', instance: '/' },
      }),
    ).toThrow();
  });

  it('covered 200/304/307/400/401/404/405/409/429/502/503/504', () => {
    const all = new Set([...seen.values()].flatMap((s) => [...s]));
    expect([...all].sort()).toEqual([200, 304, 307, 400, 401, 404, 405, 409, 429, 502, 503, 504]);
  });
});
