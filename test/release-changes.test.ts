// GET /api/v1/releases/{release}/changes over a store of four published releases: the fixture (1); a
// 1% change of isoforms' expression (bench/publish.ts changedRelease) with one long-read isoform
// dropped (2); release 1's data again under another name (3); release 2's data again with one more
// isoform record changed (4). What each answer lists is checked against what the two trees' files
// say, computed here from the files themselves; the CDN's handler over the store and `isoatlas serve`
// of the store answer alike.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash } from 'node:crypto';
import { cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { changedRelease } from '../bench/publish.js';
import { renderTree } from '../build/render/index.js';
import { publish } from '../build/publish/publish.js';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { createHandler, type Handler } from '../edge/handler.js';
import { createLambdaEdgeHandler, type CloudFrontRequestEvent } from '../edge/adapters/lambda-edge.js';
import { treePaths } from '../edge/contract/tree.js';
import type { ReleaseChangesBody } from '../edge/contract/schemas.js';
import { releaseOf, rewriteTree } from './helpers/tree.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { validate } from './helpers/schemas.js';

let work: string;
let store: string;
let trees: string[];
let names: string[];
/** The isoforms whose expression release 2 changed, and the long-read isoform it dropped. */
let reexpressed: string[];
let dropped: string;
/** The isoform release 4 changes beside release 2's changes. */
let alsoChanged: string;
let cdn: Handler;
let mirror: RunningServer;
let plain: RunningServer;

/** Copies a tree as another release: `name` in its release files, and these records' bodies changed. */
async function renamed(from: string, to: string, name: string, records: Record<string, string> = {}): Promise<void> {
  cpSync(from, to, { recursive: true });
  const release = JSON.parse(readFileSync(join(to, treePaths.release), 'utf8'));
  await rewriteTree(to, { ...records, [treePaths.release]: JSON.stringify({ ...release, release: name }) }, name);
}

/** Drops an isoform and what hangs on it from a release database. */
function dropIsoform(db: string, id: string): void {
  const d = new Database(db);
  for (const table of ['domains', 'neoantigens', 'ptm_sites', 'structures', 'isoforms'])
    d.prepare(`DELETE FROM ${table} WHERE transcript_id = ?`).run(id);
  d.close();
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-changes-'));
  const fixtureDb = inject('fixtureDb');
  const db2 = join(work, 'r2.sqlite');
  changedRelease(fixtureDb, db2);
  const d = new Database(db2, { readonly: true });
  reexpressed = (
    d.prepare('SELECT transcript_id FROM isoforms WHERE rowid % 100 = 0 ORDER BY transcript_id').all() as {
      transcript_id: string;
    }[]
  ).map((r) => r.transcript_id);
  dropped = (
    d
      .prepare(
        "SELECT transcript_id FROM isoforms WHERE transcript_id LIKE 'PB.%' AND rowid % 100 != 0 ORDER BY transcript_id LIMIT 1",
      )
      .get() as { transcript_id: string }
  ).transcript_id;
  alsoChanged = (
    d
      .prepare(
        "SELECT transcript_id FROM isoforms WHERE transcript_id LIKE 'ENST%' AND rowid % 100 != 0 ORDER BY transcript_id LIMIT 1",
      )
      .get() as { transcript_id: string }
  ).transcript_id;
  d.close();
  dropIsoform(db2, dropped);
  const [t1, t2, t3, t4] = [inject('fixtureTree'), ...['r2', 'r3', 'r4'].map((n) => join(work, n))];
  await renderTree(db2, t2, { progress: false });
  const first = releaseOf(t1);
  await renamed(t1, t3, `${first}-again`);
  const record = JSON.parse(readFileSync(join(t2, treePaths.isoform(alsoChanged)), 'utf8'));
  await renamed(t2, t4, `${first}-last`, {
    [treePaths.isoform(alsoChanged)]: JSON.stringify({ ...record, transcript_type: 'changed in release 4' }),
  });
  trees = [t1, t2, t3, t4];
  names = trees.map(releaseOf);
  store = join(work, 'store');
  const releaseStore = new ReleaseStore(new DirectoryBackend(store));
  for (const dir of trees) await publish({ dir, store: releaseStore, progress: false });
  const origin = new StoreOrigin(new LocalOrigin(store), 0);
  cdn = createHandler({ origin });
  [mirror, plain] = await Promise.all([startServer({ dir: store }), startServer({ dir: t1 })]);
}, 300_000);

afterAll(async () => {
  await Promise.all([mirror?.stop(), plain?.stop()]);
  if (work) rmSync(work, { recursive: true, force: true });
});

// ---- What the trees' files say, independently of the edge's code --------------------------------

type Part = 'record' | 'isoforms' | 'domains' | 'neoantigens' | 'ptm' | 'structure';
/** Each gene's and isoform's files (part → sha256 of its bytes, pages of a list as one part each). */
function recordsOf(tree: string): Map<string, Map<string, string>> {
  const records = new Map<string, Map<string, string>>();
  const add = (key: string, file: string, path: string) => {
    if (!records.has(key)) records.set(key, new Map());
    records.get(key)!.set(
      file,
      createHash('sha256')
        .update(readFileSync(join(tree, path)))
        .digest('hex'),
    );
  };
  const api = join(tree, 'api/v1');
  for (const [kind, below] of [
    ['gene', 'genes'],
    ['isoform', 'isoforms'],
  ] as const) {
    for (const name of readdirSync(join(api, below))) {
      if (name.endsWith('.json')) add(`${kind} ${name.slice(0, -5)}`, 'record', `api/v1/${below}/${name}`);
      else
        for (const file of readdirSync(join(api, below, name), { recursive: true }) as string[]) {
          if (!file.endsWith('.json')) continue;
          add(`${kind} ${name}`, file, `api/v1/${below}/${name}/${file}`);
        }
    }
  }
  if (existsSync(join(tree, 'structures')))
    for (const name of readdirSync(join(tree, 'structures')))
      add(`isoform ${name.replace(/\.cif$/, '')}`, 'structure.cif', `structures/${name}`);
  return records;
}

/** The part a file of a record is: `isoforms/3.json` → isoforms, `domains.json` → domains. */
const partOf = (file: string) => file.split(/[/.]/)[0] as Part;

interface Expected {
  type: string;
  id: string;
  change: string;
  parts: Part[];
}
const PART_ORDER: Part[] = ['record', 'isoforms', 'domains', 'neoantigens', 'ptm', 'structure'];

/** Every record whose files differ from tree `a` to tree `b`, as /changes should list it. */
function expectedChanges(a: string, b: string): Expected[] {
  const [was, is] = [recordsOf(a), recordsOf(b)];
  const out: Expected[] = [];
  for (const key of new Set([...was.keys(), ...is.keys()])) {
    const [x, y] = [was.get(key) ?? new Map<string, string>(), is.get(key) ?? new Map<string, string>()];
    const parts = new Set<Part>();
    for (const file of new Set([...x.keys(), ...y.keys()])) if (x.get(file) !== y.get(file)) parts.add(partOf(file));
    if (parts.size === 0) continue;
    const [type, id] = key.split(' ');
    const change = x.has('record') && y.has('record') ? 'changed' : y.has('record') ? 'added' : 'removed';
    out.push({ type, id, change, parts: PART_ORDER.filter((p) => parts.has(p)) });
  }
  return out.sort((p, q) => (p.type !== q.type ? (p.type === 'gene' ? -1 : 1) : p.id < q.id ? -1 : 1));
}

// ---- Asking ---------------------------------------------------------------------------------------

const ask = (handler: Handler, path: string) => handler(new Request(`http://atlas.test${path}`));
const viaServer = (server: RunningServer, path: string) => fetch(`${server.base}${path}`);

/** Every item of a change list, following `next` from page to page; each page checked against its
 * Link header and the schema. */
async function everyPage(get: (path: string) => Promise<Response>, first: string) {
  const pages: ReleaseChangesBody[] = [];
  for (let path: string | null = first; path !== null; ) {
    const r = await get(path);
    expect(r.status, path).toBe(200);
    const body = (await r.json()) as ReleaseChangesBody;
    expect(validate('ReleaseChanges', body), path).toEqual([]);
    expect(r.headers.get('link'), path).toBe(body.next === null ? null : `<${body.next}>; rel="next"`);
    pages.push(body);
    path = body.next;
  }
  return pages;
}

const listed = (pages: ReleaseChangesBody[]): Expected[] =>
  pages.flatMap((p) => p.items.map(({ type, id, change, parts }) => ({ type, id, change, parts })));

const changesPath = (release: string, query = '') => `/api/v1/releases/${release}/changes${query}`;

describe('the changes of a release', () => {
  it('after a 1% change and one dropped long-read isoform, lists exactly the isoforms whose record changed or went (and the gene that lost it)', async () => {
    const pages = await everyPage((p) => ask(cdn, p), changesPath(names[1]));
    const items = listed(pages);
    expect(pages[0]).toMatchObject({ release: names[1], since: names[0], total: items.length, offset: 0, limit: 100 });
    expect(items).toEqual(expectedChanges(trees[0], trees[1]));
    const isoforms = items.filter((i) => i.type === 'isoform');
    expect(isoforms.map((i) => i.id).sort()).toEqual([...reexpressed, dropped].sort());
    expect(isoforms.find((i) => i.id === dropped)).toMatchObject({ change: 'removed' });
    for (const id of reexpressed) expect(isoforms.find((i) => i.id === id)).toMatchObject({ change: 'changed' });
    // The dropped isoform's gene lost it from its record and its pages; no other gene changed.
    const gene = JSON.parse(readFileSync(join(trees[0], treePaths.isoform(dropped)), 'utf8')).gene_id;
    expect(items.filter((i) => i.type === 'gene')).toEqual([
      { type: 'gene', id: gene, change: 'changed', parts: ['record', 'isoforms'] },
    ]);
  });

  it('names each record and links it in both releases, only on the sides that have it', async () => {
    const body = (await (await ask(cdn, changesPath(names[1]))).json()) as ReleaseChangesBody;
    const gone = body.items.find((i) => i.id === dropped)!;
    const record = JSON.parse(readFileSync(join(trees[0], treePaths.isoform(dropped)), 'utf8'));
    expect(gone).toMatchObject({ symbol: record.gene_symbol, name: record.transcript_name });
    expect(gone.links).toEqual({
      since: `/api/v1/isoforms/${encodeURIComponent(dropped)}?release=${names[0]}`,
      release: null,
    });
    const kept = body.items.find((i) => i.id === reexpressed[0])!;
    for (const link of [kept.links.since!, kept.links.release!]) expect((await ask(cdn, link)).status, link).toBe(200);
    expect((await ask(cdn, gone.links.since!)).status).toBe(200);
    const gene = body.items.find((i) => i.type === 'gene')!;
    const geneRecord = JSON.parse(readFileSync(join(trees[1], treePaths.gene(gene.id)), 'utf8'));
    expect(gene).toMatchObject({ symbol: geneRecord.symbol, name: geneRecord.name });
  });

  it('pages the list: each record exactly once, in order, with the next page in the body and the Link header', async () => {
    const whole = listed(await everyPage((p) => ask(cdn, p), changesPath(names[1])));
    expect(whole.length).toBeGreaterThan(4);
    const pages = await everyPage((p) => ask(cdn, p), changesPath(names[1], '?limit=2'));
    expect(pages.length).toBe(Math.ceil(whole.length / 2));
    expect(listed(pages)).toEqual(whole);
    expect(pages[0].next).toBe(changesPath(names[1], `?since=${names[0]}&limit=2&offset=2`));
    expect(pages.at(-1)!.next).toBeNull();
    // A window past the end is empty, not an error.
    const past = (await (
      await ask(cdn, changesPath(names[1], `?offset=${whole.length}`))
    ).json()) as ReleaseChangesBody;
    expect(past).toMatchObject({ total: whole.length, items: [], next: null });
  });

  it('since an older release: the net change, not a record changed and changed back, nor one removed and added again', async () => {
    // 2 → 3 → 4 changed the 1% back and forth and dropped, restored and dropped the long-read isoform.
    const net = listed(await everyPage((p) => ask(cdn, p), changesPath(names[3], `?since=${names[1]}`)));
    expect(net).toEqual(expectedChanges(trees[1], trees[3]));
    expect(net).toEqual([{ type: 'isoform', id: alsoChanged, change: 'changed', parts: ['record'] }]);
    // Each step does list them.
    const step = listed(await everyPage((p) => ask(cdn, p), changesPath(names[2])));
    expect(step).toEqual(expectedChanges(trees[1], trees[2]));
    expect(step).toContainEqual({ type: 'isoform', id: dropped, change: 'added', parts: expect.any(Array) });
    // Release 3 is release 1's data under another name: its manifest's shards are other objects (a
    // publish encodes them against the release before), its records' bytes the same.
    expect(listed(await everyPage((p) => ask(cdn, p), changesPath(names[2], `?since=${names[0]}`)))).toEqual([]);
    // Over the whole history.
    const all = listed(await everyPage((p) => ask(cdn, p), changesPath(names[3], `?since=${names[0]}`)));
    expect(all).toEqual(expectedChanges(trees[0], trees[3]));
  });

  it('a pinned request carries its release into the next link only, not into the links into both releases', async () => {
    const r = await ask(cdn, changesPath(names[1], `?limit=2&release=${names[1]}`));
    const body = (await r.json()) as ReleaseChangesBody;
    expect(body.next).toBe(changesPath(names[1], `?since=${names[0]}&limit=2&offset=2&release=${names[1]}`));
    expect(r.headers.get('link')).toBe(`<${body.next}>; rel="next"`);
    for (const item of body.items)
      for (const link of Object.values(item.links)) if (link) expect(link.match(/release=/g)).toHaveLength(1);
  });
});

describe('the CDN and mirrors answer alike', () => {
  it('isoatlas serve of the store and the Lambda@Edge handler give the handler’s bytes', async () => {
    const lambda = createLambdaEdgeHandler(cdn);
    const event = (uri: string, querystring: string): CloudFrontRequestEvent => ({
      Records: [
        {
          cf: {
            config: { distributionDomainName: 'd.cloudfront.net', eventType: 'origin-request' },
            request: { clientIp: '203.0.113.1', method: 'GET', uri, querystring, headers: {} },
          },
        },
      ],
    });
    for (const query of ['', `?since=${names[0]}&limit=5&offset=5`]) {
      const path = changesPath(names[3], query);
      const expected = await (await ask(cdn, path)).text();
      expect(await (await viaServer(mirror, path)).text(), path).toBe(expected);
      const answer = (await lambda(event(changesPath(names[3]), query.slice(1)))) as { status: string; body: string };
      expect(answer.status, path).toBe('200');
      expect(JSON.parse(answer.body)).toEqual(JSON.parse(expected));
    }
  });
});

describe('what cannot be compared is a clear 4xx', () => {
  const refusals: [string, number, RegExp][] = [];
  beforeAll(() => {
    refusals.push(
      [changesPath(names[0]), 404, /is the oldest release this atlas keeps: it follows none here/],
      [changesPath('1999.01'), 404, /no release "1999\.01" is kept here/],
      [changesPath(names[1], `?since=${names[1]}`), 400, /"since" names .* itself/],
      [changesPath(names[1], `?since=${names[3]}`), 400, /was published after/],
      [changesPath(names[1], '?since=1999.01'), 400, /"since" must name a release this atlas keeps/],
      [changesPath(names[1], '?limit=0'), 400, /"limit" must be an integer from 1 to 100/],
      [changesPath(names[1], '?limit=101'), 400, /"limit" must be an integer from 1 to 100/],
      [changesPath(names[1], '?offset=-1'), 400, /"offset" must be an integer ≥ 0/],
      [changesPath(names[1], '?offset=next'), 400, /"offset" must be an integer ≥ 0/],
      [changesPath(names[1], '?cursor=abc'), 400, /unknown query parameter "cursor"/],
      [changesPath(names[1], '?since='), 400, /"since" must be 1–100 characters long/],
    );
  });

  it('from the CDN handler and from the mirror alike', async () => {
    for (const [path, status, detail] of refusals) {
      for (const r of [await ask(cdn, path), await viaServer(mirror, path)]) {
        expect(r.status, path).toBe(status);
        expect(r.headers.get('content-type'), path).toBe('application/problem+json; charset=utf-8');
        expect(((await r.json()) as { detail: string }).detail, path).toMatch(detail);
      }
    }
  });

  it('a server of one tree says that changes need a published store', async () => {
    const r = await viaServer(plain, changesPath(names[0]));
    expect(r.status).toBe(404);
    expect(r.headers.get('content-type')).toBe('application/problem+json; charset=utf-8');
    expect(((await r.json()) as { detail: string }).detail).toMatch(
      /this server holds one release .*a rendered tree, not a published store/,
    );
  });
});
