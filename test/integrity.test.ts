// A corrupted file in the served tree (its bytes no longer hash to the manifest's sha256) is refused
// with a 502, never served; the rest of the tree keeps being served, and a file the manifest does not
// list is not reachable even if it sits in the tree.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { createHandler, type Handler } from '../edge/handler.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { treePaths } from '../edge/contract/tree.js';
import { validate } from './helpers/schemas.js';
import { run } from './helpers/run.js';
import { readAliases, rewriteTree, withAlias } from './helpers/tree.js';
import { demoRelease } from './helpers/demo-release.js';

let dir: string;
let handler: Handler;
let errors: string[];
const originalError = console.error;

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-integrity-'));
  // A hard-linked copy: files are replaced (unlinked, then written), never written through.
  const r = await run('cp', ['-al', inject('fixtureTree'), join(dir, 'tree')]);
  expect(r.status, String(r.stderr)).toBe(0);
  handler = createHandler({ origin: new LocalTreeOrigin(join(dir, 'tree')), serveStructureFiles: true });
  errors = [];
  console.error = (...args: unknown[]) => void errors.push(args.join(' '));
});
afterAll(() => {
  console.error = originalError;
  rmSync(dir, { recursive: true, force: true });
});

function corrupt(path: string, change: (text: string) => string) {
  const file = join(dir, 'tree', path);
  const text = readFileSync(file, 'utf8');
  rmSync(file);
  writeFileSync(file, change(text));
}

const get = (path: string) => handler(new Request(`http://atlas.test${path}`));

describe('files that do not match the manifest', () => {
  it('refuses a record whose bytes changed (same size too) with 502 problem+json, and logs it once', async () => {
    const prr5 = readAliases(inject('fixtureTree')).genes.prr5 as string;
    corrupt(treePaths.gene(prr5), (t) => t.replace('"PRR5"', '"PRR6"')); // same length, other bytes
    for (let i = 0; i < 2; i++) {
      const r = await get('/api/v1/genes/PRR5');
      expect(r.status).toBe(502);
      expect(r.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
      expect(r.headers.get('retry-after')).toBe('5');
      const body = await r.json();
      expect(validate('Problem', body)).toEqual([]);
      expect(JSON.stringify(body)).not.toContain('PRR6');
    }
    expect(errors.filter((e) => e.includes(`refusing ${treePaths.gene(prr5)}`))).toHaveLength(1);
    // Everything else is still served.
    expect((await get('/api/v1/isoforms/PRR5-201')).status).toBe(200);
  });

  it('refuses a truncated edge table instead of answering from it', async () => {
    // The demo's tree, whose alias tables have many shards (the fixture's have one): a damaged shard
    // must not take the others down. A hard-linked copy, as above.
    const demo = join(dir, 'demo-tree');
    const copied = await run('cp', ['-al', (await demoRelease()).tree, demo]);
    expect(copied.status, String(copied.stderr)).toBe(0);
    const keys = Object.entries(readAliases(demo).isoforms);
    const file = join(demo, treePaths.isoformAliases(0));
    const text = readFileSync(file, 'utf8');
    rmSync(file);
    writeFileSync(file, text.slice(0, text.length / 2));
    const served = createHandler({ origin: new LocalTreeOrigin(demo) });
    const statuses = new Set<number>();
    for (const [key] of keys.filter((_, i) => i % 40 === 0))
      statuses.add((await served(new Request(`http://atlas.test/api/v1/isoforms/${encodeURIComponent(key)}`))).status);
    expect(statuses.has(502)).toBe(true); // names in the damaged shard
    expect(statuses.has(200)).toBe(true); // names in the others
    expect([...statuses].every((s) => s === 200 || s === 502)).toBe(true);
  });

  it('refuses an edge shard the manifest lists but the edge index does not vouch for', async () => {
    const other = join(dir, 'other');
    expect((await run('cp', ['-al', inject('fixtureTree'), other])).status).toBe(0);
    // The shard and the manifest are rewritten, the edge index (and the hash it lists) left as it was.
    const [path, body] = withAlias(other, 'isoforms', 'planted-name', 'ENST00000006251.11');
    await rewriteTree(other, {
      [path]: body,
      [treePaths.edgeIndex]: readFileSync(join(other, treePaths.edgeIndex), 'utf8'),
    });
    const served = createHandler({ origin: new LocalTreeOrigin(other) });
    const r = await served(new Request('http://localhost/api/v1/isoforms/planted-name'));
    expect(r.status).toBe(502);
    expect(validate('Problem', await r.json())).toEqual([]);
    expect(
      errors.filter((e) => e.includes(`refusing ${path} from dir:${other}`) && e.includes('the edge index lists')),
    ).toHaveLength(1);
  });

  it('serves nothing the manifest does not list, even a file in the tree', async () => {
    writeFileSync(join(dir, 'tree', 'api/v1/isoforms/ENST99999999999.1.json'), '{"planted":true}');
    const r = await get('/api/v1/isoforms/ENST99999999999.1');
    expect(r.status).toBe(404);
  });
});
