// The bounds on header fields (edge/contract/header-limits.ts) at a real `isoatlas serve`: the shapes
// the CDN's gate and WAF rules meet in key-spelling.test.ts, sent byte for byte with a valid key in
// arrangement B. Within the bounds the key is served wherever it sits; past either bound the request
// is refused 431 with the problem the CDN's firewall words the same way.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { HEADER_LIMITS, HEADER_LIMITS_DETAIL, overHeaderLimits } from '../edge/contract/header-limits.js';
import { PROBLEM_TYPE } from '../edge/responses.js';
import { fieldBytes, headerShapes, rawHead } from './helpers/header-shapes.js';
import { rawExchange } from './helpers/raw-request.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { issueTestKey } from './helpers/test-key.js';
import { validate } from './helpers/schemas.js';

let work: string;
let server: RunningServer;
let key: string;

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-header-limits-'));
  const keysDir = join(work, 'keys');
  ({ key } = await issueTestKey(keysDir, 'header bounds'));
  server = await startServer({
    dir: inject('fixtureTree'),
    extraArgs: ['--access', 'key-required', '--keys-dir', keysDir],
  });
}, 60_000);

afterAll(async () => {
  await server?.stop();
  rmSync(work, { recursive: true, force: true });
});

const REQUEST_LINE = 'GET /api/v1/release HTTP/1.1';
const first = () => [['host', new URL(server.base).host] as const, ['connection', 'close'] as const];

describe('isoatlas serve: the header bounds of the CDN', () => {
  it('serves a key within both bounds wherever it sits, and refuses 431 a request one field or one byte past either, the key before or after the rest', async () => {
    const shapes = headerShapes(first(), `Bearer ${key}`);
    expect(shapes.filter((s) => s.over).length).toBeGreaterThanOrEqual(6);
    for (const shape of shapes) {
      // The shape is what its label says by the shared accounting, which counts each field's line as
      // it goes on the wire.
      expect(overHeaderLimits(shape.fields), shape.label).toBe(shape.over);
      const head = rawHead(REQUEST_LINE, shape.fields);
      expect(fieldBytes(shape.fields), shape.label).toBe(Buffer.byteLength(head) - `${REQUEST_LINE}\r\n\r\n`.length);
      const r = await rawExchange(server.base, head);
      if (!shape.over) {
        expect(r.status, shape.label).toBe(200);
        continue;
      }
      expect([r.status, r.headers['content-type']], shape.label).toEqual([431, PROBLEM_TYPE]);
      const problem = JSON.parse(r.text);
      expect(validate('Problem', problem), shape.label).toEqual([]);
      expect(problem).toMatchObject({ status: 431, title: 'Request Header Fields Too Large' });
      expect(problem.detail).toBe(HEADER_LIMITS_DETAIL);
      expect(r.text, shape.label).not.toContain(key.slice(-20));
    }
  });

  it('refuses the same without a key, and answers a HEAD past a bound with the head alone', async () => {
    const fields = [...first(), ...Array.from({ length: HEADER_LIMITS.fields }, (_, i) => [`x-${i}`, 'f'] as const)];
    expect((await rawExchange(server.base, rawHead('GET /api/v1/release HTTP/1.1', fields))).status).toBe(431);
    const head = await rawExchange(server.base, rawHead('HEAD /api/v1/release HTTP/1.1', fields));
    expect([head.status, head.body.length]).toEqual([431, 0]);
  });

  it('counts a field sent twice as two fields', async () => {
    // Host, Connection, 197 fillers and the key are the bound's 200 fields; one filler sent again is one more.
    const repeated = [
      ...first(),
      ...Array.from({ length: HEADER_LIMITS.fields - 3 }, (_, i) => [`x-${i}`, 'f'] as const),
    ];
    const ok = await rawExchange(
      server.base,
      rawHead('GET /api/v1/release HTTP/1.1', [...repeated, ['authorization', `Bearer ${key}`]]),
    );
    expect(ok.status).toBe(200);
    const twice = await rawExchange(
      server.base,
      rawHead('GET /api/v1/release HTTP/1.1', [...repeated, ['x-0', 'g'], ['authorization', `Bearer ${key}`]]),
    );
    expect(twice.status).toBe(431);
  });
});
