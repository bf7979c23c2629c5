// Where an id went (#48): a store of two releases, the fixture's and a second built from its database
// with one long-read isoform and one gene dropped and one reference transcript's version raised,
// published over it with both kept. The dropped ids answer 404 naming the first release and linking
// to their records there, at every route that takes a gene or an isoform (read from the route table),
// by id and by name; an Ensembl id asked with another version than the release's names the current
// version. The handler, the CDN (the key gate, then the Lambda@Edge adapter) and `isoatlas serve` over
// the store directory answer alike; a release --keep retired or gc removed is never named, and a
// plain tree answers as before.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { copyFileSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import Database from 'better-sqlite3';
import { renderTree } from '../build/render/index.js';
import { publish } from '../build/publish/publish.js';
import { collectGarbage } from '../build/publish/collect.js';
import { createHandler, type Handler } from '../edge/handler.js';
import { StoreOrigin } from '../edge/origins/store-origin.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { createLambdaEdgeHandler } from '../edge/adapters/lambda-edge.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { CURRENT_RELEASE_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { RELEASE_HEADER, RELEASE_PARAM, routes } from '../edge/contract/routes.js';
import { linkTo } from '../edge/contract/tree.js';
import { loadCloudFrontFunction } from './helpers/cloudfront-function.js';
import { throughCdn } from './helpers/cdn-request.js';
import { dropRecords } from './helpers/release-edit.js';
import { HISTORY_DEPTH, lastRelease } from '../edge/endpoints/id-history.js';
import type { RouteRequest } from '../edge/endpoints/route-request.js';
import { releaseOf } from './helpers/tree.js';
import { validate } from './helpers/schemas.js';
import { startServer, type RunningServer } from './helpers/server.js';

let dir: string;
let first: string;
let second: string;
let secondTree: string;
let storeDir: string;
let handler: Handler;
let server: RunningServer;
/** What the second release drops or changes, read from the fixture's database. */
let isoform: { id: string; name: string };
let gene: { id: string; versioned: string; symbol: string };
let bumped: { from: string; to: string; name: string; gene: string };

const PROBLEM = 'application/problem+json; charset=utf-8';
/** The routes that take a gene or an isoform: every route with a path parameter. */
const keyed = (kind: 'gene' | 'isoform') =>
  routes.filter((r) => r.pathParams.some((p) => p.name === (kind === 'gene' ? 'symbol' : 'transcript_id')));

/** The fixture's database as a second release: the records above dropped, one version raised. */
function secondDatabase(file: string): void {
  copyFileSync(inject('fixtureDb'), file);
  const db = new Database(file);
  try {
    db.prepare("UPDATE release_meta SET value = ? WHERE key = 'release'").run(second);
    const one = (sql: string) => db.prepare(sql).get() as Record<string, string>;
    const lr = one(`SELECT transcript_id AS id, transcript_name AS name, gene_id FROM isoforms
      WHERE source = 'long_read' AND transcript_name IS NOT NULL
        AND transcript_id NOT IN (SELECT canonical_transcript_id FROM genes WHERE canonical_transcript_id IS NOT NULL)
      ORDER BY transcript_id LIMIT 1`);
    // A reference transcript with no structure (its file would be named by the old id) and not canonical.
    const ref = one(`SELECT transcript_id AS id, transcript_name AS name, gene_id FROM isoforms
      WHERE source = 'reference' AND transcript_id NOT IN (SELECT transcript_id FROM structures)
        AND transcript_id NOT IN (SELECT canonical_transcript_id FROM genes WHERE canonical_transcript_id IS NOT NULL)
      ORDER BY transcript_id LIMIT 1`);
    const g = db
      .prepare(
        `SELECT gene_id AS id, gene_id_versioned AS versioned, symbol FROM genes
        WHERE gene_id_versioned IS NOT NULL AND gene_id NOT IN (?, ?)
          AND symbol IN (SELECT symbol FROM genes GROUP BY symbol HAVING count(*) = 1)
        ORDER BY gene_id LIMIT 1`,
      )
      .get(lr.gene_id, ref.gene_id) as typeof gene;
    isoform = { id: lr.id, name: lr.name };
    gene = g;
    const [stable, version] = ref.id.split('.');
    bumped = { from: ref.id, to: `${stable}.${Number(version) + 1}`, name: ref.name, gene: ref.gene_id };
    dropRecords(db, { genes: [gene.id], isoforms: [isoform.id] });
    db.transaction(() => {
      db.pragma('defer_foreign_keys = ON');
      for (const table of ['isoforms', 'domains', 'neoantigens', 'ptm_sites'])
        db.prepare(`UPDATE ${table} SET transcript_id = ? WHERE transcript_id = ?`).run(bumped.to, bumped.from);
    })();
  } finally {
    db.close();
  }
}

/** A store in `name` holding the fixture's release and then the second, with `keep` as publish takes it. */
async function storeOf(name: string, keep?: number): Promise<ReleaseStore> {
  const store = new ReleaseStore(new DirectoryBackend(join(dir, name)));
  await publish({ dir: inject('fixtureTree'), store, progress: false });
  await publish({ dir: secondTree, store, progress: false, keep });
  return store;
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-id-history-'));
  first = releaseOf(inject('fixtureTree'));
  second = `${first}-next`;
  secondDatabase(join(dir, 'second.sqlite'));
  secondTree = join(dir, 'second');
  await renderTree(join(dir, 'second.sqlite'), secondTree, { progress: false });
  storeDir = join(dir, 'store');
  const store = await storeOf('store');
  handler = createHandler({ origin: new StoreOrigin(store.backend, 0) });
  server = await startServer({ dir: storeDir });
});
afterAll(async () => {
  await server?.stop();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

const get = async (h: Handler, target: string) => {
  const r = await h(new Request(`http://atlas.test${target}`));
  return {
    status: r.status,
    type: r.headers.get('content-type'),
    release: r.headers.get(RELEASE_HEADER),
    body: await r.json(),
  };
};
const pinned = (target: string, release: string) =>
  `${target}${target.includes('?') ? '&' : '?'}${RELEASE_PARAM}=${encodeURIComponent(release)}`;

/** Every route of `kind` asked for `key`: a 404 problem naming `release` and linking to `record`. */
async function expectNamed(kind: 'gene' | 'isoform', key: string, release: string, record: string) {
  for (const route of keyed(kind)) {
    const target = linkTo(route, key);
    const r = await get(handler, target);
    expect({ status: r.status, type: r.type }, target).toEqual({ status: 404, type: PROBLEM });
    expect(validate('Problem', r.body), target).toEqual([]);
    expect(r.body, target).toMatchObject({ last_release: release, last_release_link: pinned(record, release) });
    expect(r.body.detail, target).toContain(`Release ${release}, the newest kept release before this one`);
  }
}

describe('an id the current release lacks', () => {
  it('a dropped long-read isoform: at every isoform route, by id and by name (any case), the 404 names the first release and links to its record there, which answers it', async () => {
    expect(keyed('isoform').map((r) => r.id)).toEqual(
      expect.arrayContaining(['isoform', 'domains', 'neoantigens', 'ptm', 'structure']),
    );
    const record = linkTo(routes.find((r) => r.id === 'isoform')!, isoform.id);
    for (const key of [isoform.id, isoform.name, isoform.name.toLowerCase()])
      await expectNamed('isoform', key, first, record);
    const there = await get(handler, pinned(record, first));
    expect([there.status, there.release, there.body.transcript_id]).toEqual([200, first, isoform.id]);
    const byName = await get(handler, pinned(`/api/v1/isoforms/${isoform.name}`, first));
    expect([byName.status, byName.body.transcript_id]).toEqual([200, isoform.id]);
    // The current release answers without it, and says so.
    const now = await get(handler, `/api/v1/isoforms/${isoform.id}`);
    expect(now.release).toBe(second);
    expect(now.body.detail).toContain(`no isoform with transcript id or name "${isoform.id}" in this release`);
  });

  it('a removed gene: at every gene route, by id, versioned id and symbol, the 404 names the first release and links to its record there', async () => {
    expect(keyed('gene').map((r) => r.id)).toEqual(expect.arrayContaining(['gene', 'geneIsoforms']));
    const record = linkTo(routes.find((r) => r.id === 'gene')!, gene.id);
    for (const key of [gene.id, gene.versioned, gene.symbol]) await expectNamed('gene', key, first, record);
    const there = await get(handler, pinned(record, first));
    expect([there.status, there.body.gene_id]).toEqual([200, gene.id]);
    // Its isoforms went with it, each named alike.
    const [iso] = there.body.isoforms;
    await expectNamed('isoform', iso.transcript_id, first, `/api/v1/isoforms/${encodeURIComponent(iso.transcript_id)}`);
  });

  it('an id no kept release holds answers the plain 404, without history members', async () => {
    for (const target of [
      '/api/v1/isoforms/PB.999999.1',
      '/api/v1/genes/NO-SUCH-GENE',
      '/api/v1/isoforms/ENST99999999999.1',
    ]) {
      const r = await get(handler, target);
      expect(r.status, target).toBe(404);
      expect(Object.keys(r.body).sort(), target).toEqual([
        'detail',
        'instance',
        'release',
        'search',
        'status',
        'title',
        'type',
      ]);
    }
  });

  it("pinned to the first release, no newer release is looked in: a version the second raised names only the first's own", async () => {
    const r = await get(handler, pinned(`/api/v1/isoforms/${bumped.to}`, first));
    expect(r.status).toBe(404);
    expect(r.body).toMatchObject({
      current_id: bumped.from,
      current_link: pinned(`/api/v1/isoforms/${bumped.from}`, first),
    });
    expect(r.body.last_release).toBeUndefined();
  });
});

describe('an Ensembl id asked with another version than the release has', () => {
  it('answers 404 naming the current version and its link; the release that held the asked version is named too', async () => {
    const r = await get(handler, `/api/v1/isoforms/${bumped.from}/domains`);
    expect({ status: r.status, type: r.type }).toEqual({ status: 404, type: PROBLEM });
    expect(validate('Problem', r.body)).toEqual([]);
    expect(r.body).toMatchObject({
      current_id: bumped.to,
      current_link: `/api/v1/isoforms/${bumped.to}`,
      last_release: first,
      last_release_link: pinned(`/api/v1/isoforms/${bumped.from}`, first),
    });
    expect(r.body.detail).toContain(
      `Its current version in this release is ${bumped.to} (/api/v1/isoforms/${bumped.to})`,
    );
    // The unversioned id and the name answer the current version, as before.
    for (const key of [bumped.from.split('.')[0], bumped.name]) {
      const now = await get(handler, `/api/v1/isoforms/${key}`);
      expect([now.status, now.body.transcript_id], key).toEqual([200, bumped.to]);
    }
    // A version neither release had: the current one only.
    const [stable, version] = bumped.to.split('.');
    const later = await get(handler, `/api/v1/isoforms/${stable}.${Number(version) + 5}`);
    expect(later.body).toMatchObject({ current_id: bumped.to });
    expect(later.body.last_release).toBeUndefined();
  });

  it("a gene id with another version names the gene's current versioned id, linking to its record", async () => {
    const record = await get(handler, `/api/v1/genes/${bumped.gene}`);
    const [id, name] = [record.body.gene_id as string, record.body.gene_id_versioned as string];
    const [, version] = name.split('.');
    const target = `/api/v1/genes/${id}.${Number(version) + 1}/isoforms`;
    const r = await get(handler, target);
    expect(r.status, target).toBe(404);
    expect(validate('Problem', r.body)).toEqual([]);
    expect(r.body).toMatchObject({ current_id: name, current_link: `/api/v1/genes/${id}` });
  });
});

describe('the CDN and a server over the store directory answer alike', () => {
  it("through the key gate and the Lambda@Edge adapter, and through isoatlas serve, every answer is the handler's", async () => {
    const gate = loadCloudFrontFunction(keyGateCode(keyGateSettings(null)), new Map([[CURRENT_RELEASE_ENTRY, second]]));
    const edge = createLambdaEdgeHandler(handler);
    const targets = [
      `/api/v1/isoforms/${isoform.id}`,
      `/api/v1/isoforms/${encodeURIComponent(isoform.name)}/structure`,
      `/api/v1/genes/${gene.symbol}/isoforms`,
      `/api/v1/isoforms/${bumped.from}`,
      pinned(`/api/v1/isoforms/${isoform.id}`, second),
      pinned(`/api/v1/isoforms/${isoform.id}`, first),
    ];
    for (const target of targets) {
      const expected = await get(handler, target);
      const cdn = await throughCdn(gate, edge, target);
      expect(
        { status: Number(cdn.answer!.status), type: cdn.header('content-type'), body: JSON.parse(cdn.answer!.body!) },
        target,
      ).toEqual({ status: expected.status, type: expected.type, body: expected.body });
      const served = await fetch(`${server.base}${target}`);
      expect(
        { status: served.status, type: served.headers.get('content-type'), body: await served.json() },
        target,
      ).toEqual({ status: expected.status, type: expected.type, body: expected.body });
    }
    expect((await get(handler, targets[0])).body.last_release).toBe(first);
  });
});

describe('what is not named', () => {
  it('a release --keep retired, and then gc removed, is never named; it stays readable until collected', async () => {
    const store = await storeOf('kept-one', 1);
    const only = createHandler({ origin: new StoreOrigin(store.backend, 0) });
    const target = `/api/v1/isoforms/${isoform.id}`;
    const retired = await get(only, target);
    expect(retired.status).toBe(404);
    expect(retired.body.last_release).toBeUndefined();
    expect((await get(only, pinned(target, first))).status).toBe(200);
    await collectGarbage({ store, now: () => new Date(Date.now() + 72 * 3_600_000) });
    const after = createHandler({ origin: new StoreOrigin(store.backend, 0) });
    const collected = await get(after, target);
    expect(collected.status).toBe(404);
    expect(collected.body.last_release).toBeUndefined();
    expect((await get(after, pinned(target, first))).body.detail).toContain(`no release "${first}" in this atlas`);
  });

  it('a plain tree (no store history) answers the 404 it answered before', async () => {
    const tree = createHandler({ origin: new LocalTreeOrigin(secondTree) });
    const r = await get(tree, `/api/v1/isoforms/${isoform.id}`);
    expect(r.status).toBe(404);
    expect(Object.keys(r.body).sort()).toEqual(['detail', 'instance', 'release', 'search', 'status', 'title', 'type']);
  });
});

describe('how far back a 404 looks', () => {
  // A store keeping many releases: the id is only in the oldest. The walk reads no more than
  // HISTORY_DEPTH releases before the one asked, whatever the store keeps.
  const store = (kept: number, holder: number) => {
    const names = Array.from({ length: kept }, (_, i) => `r${i}`);
    const looked: string[] = [];
    const route = {
      release: { name: async () => names.at(-1)! },
      releases: {
        list: async () => ({ releases: names.map((release) => ({ release })) }),
        lookup: async (name: string) => {
          looked.push(name);
          return { data: { isoform: async () => (name === `r${holder}` ? 'PB.1.1' : null) } };
        },
      },
    } as unknown as RouteRequest;
    return { route, looked };
  };

  it(`looks in at most the ${HISTORY_DEPTH} kept releases before the one asked, newest first`, async () => {
    const far = store(HISTORY_DEPTH + 4, 0);
    expect(await lastRelease(far.route, 'isoform', 'PB.1.1')).toBeNull();
    expect(far.looked).toEqual(Array.from({ length: HISTORY_DEPTH }, (_, i) => `r${HISTORY_DEPTH + 2 - i}`));
    const near = store(HISTORY_DEPTH + 4, 3);
    expect(await lastRelease(near.route, 'isoform', 'PB.1.1')).toMatchObject({ release: 'r3' });
  });
});
