// Black-box contract tests of the v1 API: one real `isoatlas serve` process over the demo tree (alone,
// or behind the nginx front `isoatlas nginx-config` writes, with Debian's nginx), real HTTP requests (global fetch with redirect: 'manual'; raw node:http where fetch would normalize the
// request target). Expected values are read from the tree (files, manifest, alias and structure maps)
// rather than hard-coded, apart from a few well-known chr22 examples (PRR5, PRR5-201, DUXAP8-LR1, Y_RNA).
// One describe block per route, then one per rule that holds for every response.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import { createHash } from 'node:crypto';
import http from 'node:http';
import net from 'node:net';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import fg from 'fast-glob';
import { isKeyedFile, routes, type Route } from '../../edge/contract/routes.js';
import { keyedFilePath, namedFilePath, treePaths, withId, type StructureMapEntry } from '../../edge/contract/tree.js';
import { literally, readAliases, readManifest, readStructureMap, releaseOf } from './tree.js';
import type {
  DomainListBody,
  GeneBody,
  IsoformBody,
  IsoformPageBody,
  NeoantigenListBody,
  ProblemBody,
  PtmSiteListBody,
  ReleaseBody,
  SearchHitBody,
} from '../../edge/contract/schemas.js';
import { validate } from './schemas.js';
import { startServer, type RunningServer } from './server.js';
import { startNginxFront } from './nginx-front.js';

/** The whole contract, through `front`: `isoatlas serve` itself, or the nginx front of
 * `isoatlas nginx-config` before it (test/helpers/nginx-front.ts). */

/** fetch, sending an idempotent request once more when the server closed a kept-alive connection as
 * it was being reused (as HTTP clients may, RFC 9110 §9.2.2): on a busy machine the client can miss
 * the server's keep-alive timeout, which is a race of the transport, not an answer. */
async function fetchRetryingClosed(url: string, init: RequestInit): Promise<Response> {
  try {
    return await fetch(url, init);
  } catch (err) {
    const method = (init.method ?? 'GET').toUpperCase();
    const cause = (err as { cause?: { code?: string } }).cause;
    if ((method !== 'GET' && method !== 'HEAD') || cause?.code !== 'UND_ERR_SOCKET') throw err;
    return fetch(url, init);
  }
}

export function contractSuite(front: 'server' | 'nginx'): void {
  // ---------------------------------------------------------------------------------------------------
  // The tree, as the expected side of every comparison.

  const tree = () => inject('fixtureTree');
  const treeBytes = (path: string) => readFileSync(join(tree(), path));
  const treeJson = <T>(path: string): T => JSON.parse(treeBytes(path).toString('utf8')) as T;
  const sha256 = (bytes: Uint8Array) => createHash('sha256').update(bytes).digest('hex');

  type StructureEntry = StructureMapEntry;
  type Aliases = ReturnType<typeof readAliases>;

  let manifest: Map<string, string>; // tree path → sha256
  let aliases: Aliases;
  let structures: Record<string, StructureEntry>;
  let genes: GeneBody[];

  const PRR5 = { id: 'ENSG00000186654', versioned: 'ENSG00000186654.21', isoforms: 14 };
  const PRR5_201 = { id: 'ENST00000006251.11', unversioned: 'ENST00000006251', name: 'PRR5-201' };
  const DUXAP8_LR1 = { id: 'PB.3796.1', name: 'DUXAP8-LR1' };

  // ---------------------------------------------------------------------------------------------------
  // HTTP helpers.

  let server: RunningServer;

  interface Reply {
    status: number;
    headers: Headers;
    bytes: Buffer;
    text: string;
    json: any;
  }

  /** Every reply of the suite, for the rules that hold for all of them. */
  const replies: { what: string; status: number; contentType: string | null; text: string }[] = [];

  function record(what: string, status: number, contentType: string | null, text: string) {
    replies.push({ what, status, contentType, text });
  }

  /** `path` is relative to /api/v1 unless it is an absolute URL. The identity representation unless
   * the call asks for another: the contract compares bodies, lengths and ETags with the tree's files
   * (compression.test.ts covers the compressed ones). */
  async function call(path: string, init: RequestInit = {}): Promise<Reply> {
    const url = /^https?:/.test(path) ? path : `${server.api}${path}`;
    const headers = new Headers(init.headers);
    if (!headers.has('accept-encoding')) headers.set('accept-encoding', 'identity');
    const res = await fetchRetryingClosed(url, { redirect: 'manual', ...init, headers });
    const bytes = Buffer.from(await res.arrayBuffer());
    const text = bytes.toString('utf8');
    let json: unknown;
    try {
      json = text ? JSON.parse(text) : undefined;
    } catch {
      json = undefined;
    }
    record(`${init.method ?? 'GET'} ${url}`, res.status, res.headers.get('content-type'), text);
    return { status: res.status, headers: res.headers, bytes, text, json };
  }

  interface RawReply {
    status: number;
    headers: http.IncomingHttpHeaders;
    text: string;
  }

  /** A request whose target is sent byte for byte (fetch would resolve dot segments first). */
  function raw(target: string, method = 'GET', headers: Record<string, string> = {}): Promise<RawReply> {
    const { hostname, port } = new URL(server.base);
    return new Promise((resolve, reject) => {
      const req = http.request(
        { host: hostname, port, path: target, method, headers: { Connection: 'close', ...headers } },
        (res) => {
          const chunks: Buffer[] = [];
          res.on('data', (c: Buffer) => chunks.push(c));
          res.on('end', () => {
            const text = Buffer.concat(chunks).toString('utf8');
            record(`${method} raw ${target}`, res.statusCode!, res.headers['content-type'] ?? null, text);
            resolve({ status: res.statusCode!, headers: res.headers, text });
          });
        },
      );
      req.on('error', reject);
      req.end();
    });
  }

  function expectJson200(r: Reply) {
    expect(r.status, r.text.slice(0, 300)).toBe(200);
    expect(r.headers.get('content-type')).toBe('application/json; charset=utf-8');
    expect(r.headers.get('etag')).toMatch(/^"[0-9a-f]{64}"$/);
    expect(r.headers.get('access-control-allow-origin')).toBe('*');
  }

  /** An RFC 9457 problem with the given status (and offending parameter, if given). */
  function expectProblem(r: Reply | RawReply, status: number, parameter?: string) {
    const contentType = r.headers instanceof Headers ? r.headers.get('content-type') : r.headers['content-type'];
    const cors =
      r.headers instanceof Headers
        ? r.headers.get('access-control-allow-origin')
        : r.headers['access-control-allow-origin'];
    expect(r.status, r.text.slice(0, 300)).toBe(status);
    expect(contentType).toBe('application/problem+json; charset=utf-8');
    expect(cors).toBe('*');
    const body = JSON.parse(r.text);
    expect(validate('Problem', body)).toEqual([]);
    expect(body.status).toBe(status);
    expect(body.detail.length).toBeGreaterThan(0);
    if (parameter !== undefined) expect(body.parameter).toBe(parameter);
    expectNoLeak(r.text);
    return body as {
      type: string;
      title: string;
      status: number;
      detail: string;
      instance: string;
      parameter?: string;
      [k: string]: unknown;
    };
  }

  /** No HTML error page, no stack trace, no source path. */
  function expectNoLeak(text: string) {
    expect(text).not.toMatch(/<html|<!doctype/i);
    expect(text).not.toMatch(/\n\s+at |\bat .*\(.*:\d+:\d+\)/);
    expect(text).not.toMatch(/\.ts:\d+|\.ts\b|node:internal|node_modules/);
  }

  const etagOf = (treePath: string) => `"${manifest.get(treePath)}"`;
  const maxAge = (cacheControl: string | null) => Number(/max-age=(\d+)/.exec(cacheControl ?? '')?.[1] ?? NaN);

  /** Follows `next` links from `first`, returning the ids of all pages' items and the pages. */
  async function walk(first: string): Promise<{ ids: string[]; pages: IsoformPageBody[] }> {
    const ids: string[] = [];
    const pages: IsoformPageBody[] = [];
    let path: string | null = first;
    while (path) {
      const r = await call(path.startsWith('/api/') ? `${server.base}${path}` : path);
      expectJson200(r);
      const page = r.json as IsoformPageBody;
      expect(validate('IsoformPage', page)).toEqual([]);
      if (page.next) expect(r.headers.get('link')).toBe(`<${page.next}>; rel="next"`);
      else expect(r.headers.get('link')).toBeNull();
      expect(pages.length, 'too many pages: a next link loops').toBeLessThan(200);
      pages.push(page);
      ids.push(...page.items.map((i) => i.transcript_id));
      path = page.next;
    }
    return { ids, pages };
  }

  beforeAll(async () => {
    manifest = new Map(readManifest(tree()).entries.map((e) => [e.path, e.sha256]));
    aliases = readAliases(tree());
    structures = readStructureMap(tree());
    genes = fg
      .sync('api/v1/genes/*.json', { cwd: tree() })
      .sort()
      .map((p) => treeJson<GeneBody>(p));
    server = front === 'nginx' ? await startNginxFront({ dir: tree() }) : await startServer({ dir: tree() });
  });

  afterAll(async () => {
    if (server) expect(await server.stop()).toBe(0);
  });

  // ---------------------------------------------------------------------------------------------------
  // Routes

  describe('GET /genes/{symbol}', () => {
    it('answers the gene record with its isoforms, the same bytes for any case of the symbol', async () => {
      const file = treeBytes(treePaths.gene(PRR5.id));
      const bodies = await Promise.all(['prr5', 'PRR5', 'Prr5', 'pRr5'].map((s) => call(`/genes/${s}`)));
      for (const r of bodies) {
        expectJson200(r);
        expect(r.bytes.equals(file)).toBe(true);
        expect(r.headers.get('etag')).toBe(etagOf(treePaths.gene(PRR5.id)));
      }
      const gene = bodies[0].json as GeneBody;
      expect(validate('Gene', gene)).toEqual([]);
      expect(gene).toMatchObject({
        gene_id: PRR5.id,
        gene_id_versioned: PRR5.versioned,
        symbol: 'PRR5',
        isoform_count: PRR5.isoforms,
      });
      expect(gene.isoforms).toHaveLength(PRR5.isoforms);
      expect(gene.isoforms.map((i) => i.transcript_name)).toContain(PRR5_201.name);
    });

    it('accepts the Ensembl gene id with or without its version, in any case', async () => {
      const bySymbol = await call('/genes/PRR5');
      for (const key of [PRR5.id, PRR5.versioned, PRR5.id.toLowerCase(), PRR5.versioned.toLowerCase()]) {
        const r = await call(`/genes/${key}`);
        expectJson200(r);
        expect(r.bytes.equals(bySymbol.bytes), key).toBe(true);
        expect(r.headers.get('etag')).toBe(bySymbol.headers.get('etag'));
      }
    });

    it('reaches a sample of genes from the tree by id, versioned id and unique symbol', async () => {
      const step = Math.floor(genes.length / 12);
      for (const gene of genes.filter((_, i) => i % step === 0)) {
        const file = treeBytes(treePaths.gene(gene.gene_id));
        const keys = [gene.gene_id, ...(gene.gene_id_versioned ? [gene.gene_id_versioned] : [])];
        if (typeof aliases.genes[gene.symbol.toLowerCase()] === 'string')
          keys.push(gene.symbol.toLowerCase(), gene.symbol.toUpperCase());
        for (const key of keys) {
          const r = await call(`/genes/${encodeURIComponent(key)}`);
          expectJson200(r);
          expect(r.bytes.equals(file), key).toBe(true);
        }
      }
    });

    it('answers 409 with the choices for a symbol naming several genes, each choice resolving to 200', async () => {
      const expected = aliases.genes.y_rna as string[];
      expect(expected).toHaveLength(13);
      for (const symbol of ['Y_RNA', 'y_rna']) {
        const r = await call(`/genes/${symbol}`);
        const body = expectProblem(r, 409);
        const choices = body.choices as { gene_id: string; link: string }[];
        expect(choices.map((c) => c.gene_id).sort()).toEqual([...expected].sort());
      }
      const { choices } = (await call('/genes/Y_RNA')).json as { choices: { gene_id: string; link: string }[] };
      for (const choice of choices) {
        const r = await call(`${server.base}${choice.link}`);
        expectJson200(r);
        expect(r.json).toMatchObject({ gene_id: choice.gene_id, symbol: 'Y_RNA' });
        expect(r.bytes.equals(treeBytes(treePaths.gene(choice.gene_id)))).toBe(true);
      }
    });

    it('answers 404 for an unknown gene', async () => {
      for (const key of ['NO_SUCH_GENE', 'ENSG00000000000', `${PRR5.id}.999`]) {
        const body = expectProblem(await call(`/genes/${key}`), 404);
        expect(body.detail).toContain(key);
      }
    });

    it('points a 404 to search and to what the release covers: CHEKK2 is a typo of CHEK2, TP53 is not on chr22', async () => {
      const typo = expectProblem(await call('/genes/CHEKK2'), 404) as ProblemBody & { search: string; release: string };
      expect(typo.search).toBe('/api/v1/search?query=CHEKK2');
      expect(typo.detail).toContain(typo.search);
      const found = (await call(`${server.base}${typo.search}`)).json as { items: SearchHitBody[] };
      expect(found.items[0]).toMatchObject({ symbol: 'CHEK2', match: 'fuzzy' });
      const elsewhere = expectProblem(await call('/isoforms/TP53-201'), 404) as ProblemBody & { release: string };
      expect(elsewhere.detail).toContain('/api/v1/release');
      const release = (await call(`${server.base}${elsewhere.release}`)).json as ReleaseBody;
      expect(release.coverage.chromosomes).toEqual(['chr22']);
      expect(release.coverage.description).toMatch(/chromosome 22 only.*TP53/);
    });
  });

  describe('GET /genes/{symbol}/isoforms', () => {
    const sampleGenes = () => {
      // The largest genes, PRR5, a one-isoform gene and a novel long-read locus.
      const bySize = [...genes].sort((a, b) => b.isoform_count - a.isoform_count || (a.gene_id < b.gene_id ? -1 : 1));
      const picks = [
        ...bySize.slice(0, 3),
        genes.find((g) => g.gene_id === PRR5.id)!,
        bySize.find((g) => g.isoform_count === 1)!,
      ];
      const novel = genes.find((g) => g.source === 'long_read');
      if (novel) picks.push(novel);
      return picks;
    };

    it('serves the whole list by default (limit 100), as the pre-split page file', async () => {
      const r = await call('/genes/prr5/isoforms');
      expectJson200(r);
      expect(r.bytes.equals(treeBytes(treePaths.geneIsoforms(PRR5.id, 0)))).toBe(true);
      expect(r.headers.get('etag')).toBe(etagOf(treePaths.geneIsoforms(PRR5.id, 0)));
      expect(r.json).toMatchObject({
        gene_id: PRR5.id,
        symbol: 'PRR5',
        total: PRR5.isoforms,
        limit: 100,
        offset: 0,
        next: null,
      });
      expect(r.headers.get('link')).toBeNull();
      const gene = treeJson<GeneBody>(treePaths.gene(PRR5.id));
      expect((r.json as IsoformPageBody).items).toEqual(gene.isoforms);
    });

    it('paginates with limit and offset, with a next URL and a Link header while there are more', async () => {
      const r = await call('/genes/PRR5/isoforms?limit=3');
      expectJson200(r);
      const page = r.json as IsoformPageBody;
      expect(validate('IsoformPage', page)).toEqual([]);
      expect(page).toMatchObject({ total: PRR5.isoforms, limit: 3, offset: 0 });
      expect(page.items).toHaveLength(3);
      expect(page.next).toMatch(/^\/api\/v1\/genes\/[^?]+\/isoforms\?/);
      const next = new URL(page.next!, server.base).searchParams;
      expect([next.get('limit'), next.get('offset')]).toEqual(['3', '3']);
      expect(r.headers.get('link')).toBe(`<${page.next}>; rel="next"`);

      const last = await call(`/genes/PRR5/isoforms?limit=3&offset=${PRR5.isoforms - 2}`);
      expectJson200(last);
      expect(last.json).toMatchObject({ offset: PRR5.isoforms - 2, next: null });
      expect(last.json.items).toHaveLength(2);
      expect(last.headers.get('link')).toBeNull();
    });

    it.each([
      [3, 0],
      [1, 0],
      [7, 2],
      [100, 0],
    ])(
      'walking next links with limit=%i offset=%i lists each isoform exactly once, in gene order',
      async (limit, offset) => {
        for (const gene of sampleGenes()) {
          const { ids, pages } = await walk(
            `/genes/${encodeURIComponent(gene.gene_id)}/isoforms?limit=${limit}&offset=${offset}`,
          );
          const expected = gene.isoforms.map((i) => i.transcript_id).slice(offset);
          expect(ids, gene.symbol).toEqual(expected);
          expect(new Set(ids).size).toBe(ids.length);
          expect(pages).toHaveLength(Math.max(1, Math.ceil(expected.length / limit)));
          pages.forEach((p, n) => {
            expect(p).toMatchObject({
              gene_id: gene.gene_id,
              total: gene.isoform_count,
              limit,
              offset: offset + n * limit,
            });
            expect(p.items.length).toBeLessThanOrEqual(limit);
          });
          // Items are the gene record's summaries, not just the same ids.
          expect(pages.flatMap((p) => p.items)).toEqual(gene.isoforms.slice(offset));
        }
      },
    );

    it('answers 200 with no items when offset is at or past the total', async () => {
      for (const offset of [PRR5.isoforms, PRR5.isoforms + 1, 100, 1000, 999999999]) {
        const r = await call(`/genes/PRR5/isoforms?offset=${offset}&limit=5`);
        expectJson200(r);
        expect(r.json).toMatchObject({ total: PRR5.isoforms, offset, limit: 5, next: null, items: [] });
        expect(r.headers.get('link')).toBeNull();
      }
      const r = await call(`/genes/PRR5/isoforms?offset=100`);
      expectJson200(r);
      expect(r.json).toMatchObject({ offset: 100, limit: 100, items: [], next: null });
    });

    it.each([
      ['limit=0', 'limit', /minimum of 1\b/],
      ['limit=101', 'limit', /maximum of 100\b/],
      ['offset=-1', 'offset', /minimum of 0\b/],
      ['limit=abc', 'limit', /abc/],
      ['limit=1.5', 'limit', /1\.5/],
      ['limit=', 'limit', /limit/],
      ['limit=1e2', 'limit', /limit/],
      ['limit=%203', 'limit', /limit/],
      ['offset=x', 'offset', /offset/],
      ['limit=3&limit=4', 'limit', /more than once/],
      ['limit=3&offset=0&offset=3', 'offset', /more than once/],
    ])('answers 400 for %s, naming the parameter', async (query, parameter, detail) => {
      const body = expectProblem(await call(`/genes/PRR5/isoforms?${query}`), 400, parameter);
      expect(body.detail).toMatch(detail);
    });

    it('answers 404 for an unknown gene and 409 for an ambiguous symbol', async () => {
      expectProblem(await call('/genes/NO_SUCH_GENE/isoforms'), 404);
      expect(expectProblem(await call('/genes/Y_RNA/isoforms'), 409).choices).toHaveLength(13);
    });
  });

  describe('GET /isoforms/{transcript_id}', () => {
    it('answers byte-identical bodies for the versioned id, unversioned id and name in any case', async () => {
      const file = treeBytes(treePaths.isoform(PRR5_201.id));
      const etag = etagOf(treePaths.isoform(PRR5_201.id));
      const keys = [
        PRR5_201.id,
        PRR5_201.id.toLowerCase(),
        PRR5_201.unversioned,
        PRR5_201.name,
        PRR5_201.name.toLowerCase(),
        'Prr5-201',
        'PRR5%2D201',
      ];
      for (const key of keys) {
        const r = await call(`/isoforms/${key}`);
        expectJson200(r);
        expect(r.bytes.equals(file), key).toBe(true);
        expect(r.headers.get('etag'), key).toBe(etag);
      }
      const iso = JSON.parse(file.toString('utf8')) as IsoformBody;
      expect(validate('Isoform', iso)).toEqual([]);
      expect(iso).toMatchObject({ transcript_id: PRR5_201.id, transcript_name: PRR5_201.name, gene_id: PRR5.id });
    });

    it('answers the same for a long-read isoform by PB id and by name', async () => {
      const file = treeBytes(treePaths.isoform(DUXAP8_LR1.id));
      for (const key of [DUXAP8_LR1.id, DUXAP8_LR1.id.toLowerCase(), DUXAP8_LR1.name, DUXAP8_LR1.name.toLowerCase()]) {
        const r = await call(`/isoforms/${key}`);
        expectJson200(r);
        expect(r.bytes.equals(file), key).toBe(true);
        expect(r.headers.get('etag')).toBe(etagOf(treePaths.isoform(DUXAP8_LR1.id)));
      }
      expect(validate('Isoform', JSON.parse(file.toString('utf8')))).toEqual([]);
    });

    it('reaches a sample of isoforms from the tree by every name', async () => {
      const files = fg.sync('api/v1/isoforms/*.json', { cwd: tree() }).sort();
      const step = Math.floor(files.length / 15);
      for (const path of files.filter((_, i) => i % step === 0)) {
        const file = treeBytes(path);
        const iso = JSON.parse(file.toString('utf8')) as IsoformBody;
        const keys = [iso.transcript_id, iso.transcript_name.toUpperCase(), iso.transcript_name.toLowerCase()];
        if (iso.transcript_id_unversioned) keys.push(iso.transcript_id_unversioned);
        for (const key of keys) {
          const r = await call(`/isoforms/${encodeURIComponent(key)}`);
          expectJson200(r);
          expect(r.bytes.equals(file), key).toBe(true);
        }
      }
    });

    it('answers 404 for an unknown isoform, and does not decode twice', async () => {
      for (const key of [
        'ENST00000000000',
        'ENST00000000000.1',
        'PRR5-999',
        'PB.0.0',
        `${PRR5_201.unversioned}.999`,
        'PRR5%252D201',
      ]) {
        expectProblem(await call(`/isoforms/${key}`), 404);
      }
    });
  });

  describe('GET /isoforms/{transcript_id}/domains', () => {
    it('validates against DomainList, ordered by start, as the tree file', async () => {
      // The isoform with the most domains, so the ordering is exercised.
      const lists = fg.sync('api/v1/isoforms/*/domains.json', { cwd: tree() }).map((p) => treeJson<DomainListBody>(p));
      const most = lists.reduce((a, b) => (b.items.length > a.items.length ? b : a));
      expect(most.items.length).toBeGreaterThan(2);
      for (const id of [most.transcript_id, most.transcript_name, PRR5_201.name]) {
        const r = await call(`/isoforms/${id}/domains`);
        expectJson200(r);
        const list = r.json as DomainListBody;
        expect(validate('DomainList', list)).toEqual([]);
        expect(list.total).toBe(list.items.length);
        const starts = list.items.map((d) => d.start);
        expect(starts).toEqual([...starts].sort((a, b) => a - b));
        expect(r.bytes.equals(treeBytes(treePaths.domains(list.transcript_id)))).toBe(true);
        expect(r.headers.get('etag')).toBe(etagOf(treePaths.domains(list.transcript_id)));
      }
    });

    it('answers 404 for an unknown isoform', async () => {
      expectProblem(await call('/isoforms/NO-SUCH-ISOFORM/domains'), 404);
    });
  });

  describe('GET /isoforms/{transcript_id}/ptm', () => {
    it("lists MAPK1-201's sites by id and by name, as the tree file, each on the residue the sequence has", async () => {
      const iso = treeJson<IsoformBody>(treePaths.isoform('ENST00000215832.11'));
      expect(iso.links.ptm).toBe('/api/v1/isoforms/ENST00000215832.11/ptm');
      for (const key of ['ENST00000215832.11', 'ENST00000215832', 'MAPK1-201', 'mapk1-201']) {
        const r = await call(`/isoforms/${key}/ptm`);
        expectJson200(r);
        expect(r.bytes.equals(treeBytes(treePaths.ptm(iso.transcript_id))), key).toBe(true);
        expect(r.headers.get('etag')).toBe(etagOf(treePaths.ptm(iso.transcript_id)));
        const list = r.json as PtmSiteListBody;
        expect(validate('PtmSiteList', list)).toEqual([]);
        expect(list.total).toBe(iso.metrics.ptm);
        expect(list.total).toBeGreaterThan(0);
        for (const site of list.items) expect(iso.protein_sequence![site.position - 1]).toBe(site.residue);
      }
    });

    it('has a list for every isoform: as many sites as its metric counts, ordered by position, on its own residues', () => {
      const files = fg.sync('api/v1/isoforms/*.json', { cwd: tree() });
      let sites = 0;
      for (const f of files) {
        const iso = treeJson<IsoformBody>(f);
        const list = treeJson<PtmSiteListBody>(treePaths.ptm(iso.transcript_id));
        expect(list.total, f).toBe(iso.metrics.ptm ?? 0);
        const positions = list.items.map((s) => s.position);
        expect(positions).toEqual([...positions].sort((a, b) => a - b));
        for (const site of list.items) expect(iso.protein_sequence![site.position - 1], f).toBe(site.residue);
        sites += list.total;
      }
      expect(sites).toBe(treeJson<ReleaseBody>(treePaths.release).counts.ptm_sites);
    });

    it('answers 404 for an unknown isoform', async () => {
      expectProblem(await call('/isoforms/NO-SUCH-ISOFORM/ptm'), 404);
    });
  });

  describe('GET /isoforms/{transcript_id}/neoantigens', () => {
    let many: NeoantigenListBody; // an isoform with more than 50 predicted neoantigens
    beforeAll(() => {
      const path = fg
        .sync('api/v1/isoforms/*/neoantigens.json', { cwd: tree() })
        .sort()
        .find((p) => treeJson<NeoantigenListBody>(p).total > 50)!;
      many = treeJson<NeoantigenListBody>(path);
    });

    it('answers the top 50, best first, by default', async () => {
      const r = await call(`/isoforms/${many.transcript_name}/neoantigens`);
      expectJson200(r);
      expect(r.bytes.equals(treeBytes(treePaths.neoantigens(many.transcript_id)))).toBe(true);
      expect(r.headers.get('etag')).toBe(etagOf(treePaths.neoantigens(many.transcript_id)));
      const list = r.json as NeoantigenListBody;
      expect(validate('NeoantigenList', list)).toEqual([]);
      expect(list.limit).toBe(50);
      expect(list.items).toHaveLength(50);
      expect(list.total).toBeGreaterThan(50);
      expect(list.items.map((n) => n.rank)).toEqual(list.items.map((_, i) => i + 1));
      for (let i = 1; i < list.items.length; i++) {
        const [a, b] = [list.items[i - 1], list.items[i]];
        expect(b.affinity_nm!).toBeGreaterThanOrEqual(a.affinity_nm!);
        if (b.affinity_nm === a.affinity_nm) expect(b.percentile_rank!).toBeGreaterThanOrEqual(a.percentile_rank!);
      }
    });

    it('limit=2 gives the first two items of the default response; limit=50 the default response', async () => {
      const all = await call(`/isoforms/${many.transcript_id}/neoantigens`);
      const two = await call(`/isoforms/${many.transcript_id}/neoantigens?limit=2`);
      expectJson200(two);
      expect(validate('NeoantigenList', two.json)).toEqual([]);
      expect(two.json).toEqual({ ...all.json, limit: 2, items: all.json.items.slice(0, 2) });
      expect(two.headers.get('etag')).not.toBe(all.headers.get('etag'));
      const fifty = await call(`/isoforms/${many.transcript_id}/neoantigens?limit=50`);
      expect(fifty.bytes.equals(all.bytes)).toBe(true);
    });

    it('answers an empty list for a non-coding isoform', async () => {
      const r = await call(`/isoforms/${DUXAP8_LR1.id}/neoantigens?limit=5`);
      expectJson200(r);
      expect(r.json).toMatchObject({ transcript_id: DUXAP8_LR1.id, total: 0, items: [] });
    });

    it.each([
      ['limit=51', /maximum of 50\b/],
      ['limit=0', /minimum of 1\b/],
      ['limit=-5', /minimum of 1\b/],
      ['limit=ten', /ten/],
      ['offset=2', /unknown query parameter "offset"/],
    ])('answers 400 for %s', async (query, detail) => {
      const body = expectProblem(await call(`/isoforms/${PRR5_201.name}/neoantigens?${query}`), 400);
      expect(body.parameter).toBe(query.split('=')[0]);
      expect(body.detail).toMatch(detail);
    });
  });

  describe('GET /isoforms/{transcript_id}/structure', () => {
    it('redirects (307, no body) to a root-relative path of an mmCIF file that this server serves', async () => {
      const ids = Object.keys(structures).sort();
      expect(ids.length).toBeGreaterThan(0);
      for (const id of [ids[0], ids[Math.floor(ids.length / 2)], ids[ids.length - 1]]) {
        const name = treeJson<IsoformBody>(treePaths.isoform(id)).transcript_name;
        const r = await call(`/isoforms/${id}/structure`);
        expect(r.status).toBe(307);
        expect(r.bytes.length).toBe(0);
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
        expect(r.headers.get('cache-control')).toBeTruthy();
        // Root-relative: a cached redirect names no host, whatever Host the first client sent.
        const location = r.headers.get('location')!;
        expect(location).toBe(`/${structures[id].path}`);
        const hosted = await call(`/isoforms/${id}/structure`, { headers: { 'X-Forwarded-Host': 'evil.example' } });
        expect(hosted.headers.get('location')).toBe(location);

        const byName = await call(`/isoforms/${name.toLowerCase()}/structure`);
        expect(byName.status).toBe(307);
        expect(byName.headers.get('location')).toBe(location);

        const cif = await call(`${server.base}${location}`);
        expect(cif.status).toBe(200);
        expect(cif.headers.get('content-type')).toBe('chemical/x-mmcif');
        expect(cif.text.startsWith('data_')).toBe(true);
        expect(cif.text).toMatch(/^loop_\s*\n_atom_site\./m);
        expect(sha256(cif.bytes)).toBe(structures[id].sha256);
      }
    });

    it('answers 404 for an isoform without a structure, and for an unknown isoform', async () => {
      expect(structures[PRR5_201.id]).toBeUndefined();
      const body = expectProblem(await call(`/isoforms/${PRR5_201.name}/structure`), 404);
      expect(body.detail).toContain(PRR5_201.id);
      expectProblem(await call('/isoforms/NO-SUCH-ISOFORM/structure'), 404);
    });
  });

  describe('GET /search', () => {
    const search = async (query: string, extra = '') => {
      const r = await call(`/search?query=${encodeURIComponent(query)}${extra}`);
      expectJson200(r);
      expect(validate('SearchResults', r.json)).toEqual([]);
      return r.json as { query: string; limit: number; total: number; items: SearchHitBody[] };
    };
    const tierRank = { exact: 0, prefix: 1, fuzzy: 2 } as const;

    it('ranks an exact symbol match first, then prefix matches', async () => {
      const res = await search('PRR5');
      expect(res).toMatchObject({ query: 'PRR5', limit: 10 });
      expect(res.items[0]).toEqual({
        type: 'gene',
        id: PRR5.id,
        symbol: 'PRR5',
        name: 'proline rich 5',
        matched_field: 'symbol',
        match: 'exact',
        score: expect.any(Number),
        link: `/api/v1/genes/${PRR5.id}`,
      });
      expect(res.items.some((h) => h.match === 'prefix')).toBe(true);
      const linked = await call(`${server.base}${res.items[0].link}`);
      expect(linked.bytes.equals(treeBytes(treePaths.gene(PRR5.id)))).toBe(true);
    });

    it('finds a gene by its synonyms, after records whose own symbol, id or name the query is', async () => {
      for (const [query, symbol] of [
        ['ERK2', 'MAPK1'],
        ['RAD53', 'CHEK2'],
        ['cds1', 'CHEK2'],
      ]) {
        const res = await search(query);
        const hit = res.items.find((h) => h.symbol === symbol && h.type === 'gene');
        expect(hit, query).toMatchObject({ match: 'exact', matched_field: 'synonyms', score: 0.5 });
        // Everything ranked above it matched through its own symbol, id or name.
        for (const above of res.items.slice(0, res.items.indexOf(hit!)))
          expect(above.matched_field, query).not.toBe('synonyms');
      }
      // A symbol that is also another gene's synonym finds that gene itself first.
      const gene = treeJson<GeneBody>(treePaths.gene('ENSG00000100030'));
      expect(gene.synonyms).toContain('ERK2');
      const own = await search('MAPK1');
      expect(own.items[0]).toMatchObject({ symbol: 'MAPK1', matched_field: 'symbol', score: 1 });
    });

    it('finds a gene first by its full name, either way hyphenated, and shows the name its record has', async () => {
      const mapk1 = treeJson<GeneBody>(treePaths.gene('ENSG00000100030'));
      expect(mapk1.name).toBe('mitogen-activated protein kinase 1');
      for (const query of [mapk1.name!, 'mitogen activated protein kinase 1'])
        expect((await search(query)).items[0], query).toMatchObject({
          type: 'gene',
          id: 'ENSG00000100030',
          name: mapk1.name,
          match: 'exact',
          matched_field: 'name',
        });
      expect((await search('proline rich 5')).items[0]).toMatchObject({ id: PRR5.id, name: 'proline rich 5' });
    });

    it('ranks an exact id or name match first', async () => {
      const cases: [string, string, SearchHitBody['type']][] = [
        [PRR5_201.unversioned, PRR5_201.id, 'isoform'],
        [PRR5_201.id, PRR5_201.id, 'isoform'],
        ['prr5-201', PRR5_201.id, 'isoform'],
        [DUXAP8_LR1.id.toLowerCase(), DUXAP8_LR1.id, 'isoform'],
        [DUXAP8_LR1.name, DUXAP8_LR1.id, 'isoform'],
        [PRR5.versioned, PRR5.id, 'gene'],
        [PRR5.id.toLowerCase(), PRR5.id, 'gene'],
      ];
      for (const [query, id, type] of cases) {
        const [first] = (await search(query)).items;
        expect(first, query).toMatchObject({ id, type, match: 'exact' });
        if (type === 'isoform') expect(first.link).toBe(`/api/v1/isoforms/${id}`);
      }
    });

    it('orders tiers exact, then prefix, then fuzzy, and is case-insensitive', async () => {
      for (const query of ['PRR5', 'prr5-201', 'ENST0000000', 'a', 'MAPK1', 'PRR6']) {
        const res = await search(query, '&limit=25');
        const tiers = res.items.map((h) => tierRank[h.match]);
        expect(tiers, query).toEqual([...tiers].sort((a, b) => a - b));
        for (const variant of [query.toLowerCase(), query.toUpperCase()]) {
          expect((await search(variant, '&limit=25')).items, variant).toEqual(res.items);
        }
      }
    });

    it('finds a gene despite a typo or a transposition (fuzzy)', async () => {
      const cases: [string, string][] = [
        ['PRR6', 'PRR5'], // substitution
        ['PPR5', 'PRR5'],
        ['MPAK1', 'MAPK1'], // transpositions
        ['SMRACB1', 'SMARCB1'],
        ['CRAD10', 'CARD10'],
      ];
      for (const [query, symbol] of cases) {
        const res = await search(query);
        const hit = res.items.find((h) => h.type === 'gene' && h.symbol === symbol);
        expect(hit, `${query} → ${symbol}`).toMatchObject({ match: 'fuzzy', matched_field: 'symbol' });
      }
    });

    it('answers 200 with no items when nothing matches', async () => {
      expect(await search('zzzzqqqqxxxx')).toMatchObject({ total: 0, items: [] });
    });

    it('returns 10 hits by default and up to limit (1–25)', async () => {
      const wide = await search('a', '&limit=25');
      expect(wide.total).toBeGreaterThan(25);
      expect(wide.items).toHaveLength(25);
      const byDefault = await search('a');
      expect(byDefault).toMatchObject({ limit: 10, total: wide.total });
      expect(byDefault.items).toEqual(wide.items.slice(0, 10));
      expect((await search('a', '&limit=1')).items).toEqual(wide.items.slice(0, 1));
    });

    it('accepts a query of exactly 100 characters', async () => {
      await search('x'.repeat(100));
      await search('é'.repeat(100)); // characters, not bytes
    });

    it.each([
      ['', 'query', /required/],
      ['query=', 'query', /1–100/],
      ['query=%20%20', 'query', /white space/],
      [`query=${'x'.repeat(101)}`, 'query', /got 101/],
      ['query=a&limit=200', 'limit', /maximum of 25\b/],
      ['query=a&limit=26', 'limit', /maximum of 25\b/],
      ['query=a&limit=0', 'limit', /minimum of 1\b/],
      ['query=a&query=b', 'query', /more than once/],
      ['query=a&offset=10', 'offset', /unknown query parameter/],
      ['q=a', 'q', /unknown query parameter/],
    ])('answers 400 for ?%s', async (query, parameter, detail) => {
      const body = expectProblem(await call(`/search?${query}`), 400, parameter);
      expect(body.detail).toMatch(detail);
    });
  });

  describe('GET / and /release, /openapi.json', () => {
    it('answers the same release body at / and /release', async () => {
      const root = await call('/');
      const release = await call('/release');
      for (const r of [root, release]) {
        expectJson200(r);
        expect(r.bytes.equals(treeBytes(treePaths.release))).toBe(true);
        expect(r.headers.get('etag')).toBe(etagOf(treePaths.release));
      }
      expect(validate('Release', root.json)).toEqual([]);
      expect(root.json).toMatchObject({ service: 'isoatlas', api_version: 'v1' });
    });

    it('publishes an OpenAPI 3.1 document whose paths cover the route table', async () => {
      const r = await call('/openapi.json');
      expectJson200(r);
      expect(r.headers.get('etag')).toBe(etagOf(treePaths.openapi));
      const doc = r.json as {
        openapi: string;
        paths: Record<string, Record<string, { parameters?: { name: string }[] }>>;
      };
      expect(doc.openapi).toBe('3.1.0');
      expect(Object.keys(doc.paths).sort()).toEqual(routes.map((route) => route.path).sort());
      for (const route of routes) {
        const documented = (doc.paths[route.path].get.parameters ?? []).map((p) => p.name).sort();
        const declared = [...route.pathParams, ...route.integerParams, ...route.stringParams].map((p) => p.name).sort();
        expect(documented, route.path).toEqual(declared);
      }
    });
  });

  // ---------------------------------------------------------------------------------------------------
  // Rules for every response

  describe('errors are problem+json', () => {
    it.each([
      ['/genes/NO_SUCH_GENE', 404, undefined],
      ['/isoforms/ENST00000000000.1', 404, undefined],
      ['/genes/PRR5/isoforms?limit=abc', 400, 'limit'],
      ['/genes/PRR5?limit=3', 400, 'limit'],
      ['/release?foo=bar', 400, 'foo'],
      ['/?x=1', 400, 'x'],
      ['/openapi.json?format=yaml', 400, 'format'],
      ['/search?query=PRR5&Limit=3', 400, 'Limit'],
      ['/isoforms/PRR5-201/domains?limit=1', 400, 'limit'],
      ['/nope', 404, undefined],
      ['/genes', 404, undefined],
      ['/isoforms', 404, undefined],
      ['/genes/PRR5/isoforms/extra', 404, undefined],
      ['/isoforms/PRR5-201/unknown', 404, undefined],
      ['/release.json', 404, undefined],
      ['/manifest.json', 404, undefined],
    ])('%s → %i', async (path, status, parameter) => {
      const body = expectProblem(await call(path), status, parameter);
      expect(body.instance).toBe(`/api/v1${path}`);
      expect(body.title.length).toBeGreaterThan(0);
    });

    it('answers 404 problem+json outside /api/v1', async () => {
      for (const path of [
        '/',
        '/api',
        '/api/v2/release',
        '/favicon.ico',
        '/index.html',
        '/manifest.json',
        '/edge/index.json',
        '/structures/',
        '/structures/nope.cif',
      ]) {
        expectProblem(await call(`${server.base}${path}`), 404);
      }
    });

    it.each(['POST', 'PUT', 'DELETE', 'PATCH'])('answers 405 with Allow to %s', async (method) => {
      for (const path of ['/genes/PRR5', '/search?query=PRR5', '/release', '/nope']) {
        const r = await call(path, {
          method,
          body: method === 'DELETE' ? undefined : '{"x":1}',
          headers: { 'Content-Type': 'application/json' },
        });
        const body = expectProblem(r, 405);
        expect(body.detail).toContain(method);
        const allow = (r.headers.get('allow') ?? '').split(',').map((m) => m.trim());
        expect(allow).toEqual(expect.arrayContaining(['GET', 'HEAD', 'OPTIONS']));
        expect(allow).not.toContain(method);
      }
    });
  });

  describe('200 JSON responses: content type, ETag, conditional GET, Cache-Control, HEAD', () => {
    // File-backed routes: the body is the file, so the ETag is the manifest's sha256 of it. Every route
    // the table declares as a file (for PRR5 or PRR5-201), then other names and forms of the same files.
    const declaredFile = (route: Route): [string, string] => {
      if (!isKeyedFile(route)) return [route.path, namedFilePath(route.file as { name: string })];
      const [name, id] = route.file.per === 'gene' ? ['PRR5', PRR5.id] : [PRR5_201.name, PRR5_201.id];
      return [withId(route, name), keyedFilePath(route, id, route.file.window === 'pages' ? 0 : undefined)];
    };
    const fileBacked = (): [string, string][] => [
      ...(routes as readonly Route[]).filter((r) => r.file).map(declaredFile),
      ['/genes/PRR5', treePaths.gene(PRR5.id)],
      ['/genes/PRR5/isoforms', treePaths.geneIsoforms(PRR5.id, 0)],
      ['/genes/PRR5/isoforms?limit=100&offset=0', treePaths.geneIsoforms(PRR5.id, 0)],
      [`/isoforms/${PRR5_201.name}`, treePaths.isoform(PRR5_201.id)],
      [`/isoforms/${PRR5_201.unversioned}/domains`, treePaths.domains(PRR5_201.id)],
      [`/isoforms/${PRR5_201.id}/neoantigens`, treePaths.neoantigens(PRR5_201.id)],
      [`/isoforms/${DUXAP8_LR1.name}`, treePaths.isoform(DUXAP8_LR1.id)],
    ];
    const computed = [
      '/search?query=PRR5',
      '/genes/PRR5/isoforms?limit=3&offset=3',
      `/isoforms/${PRR5_201.name}/neoantigens?limit=2`,
    ];

    it('file-backed routes carry the manifest sha256 as ETag and the file as body', async () => {
      for (const [path, file] of fileBacked()) {
        const r = await call(path);
        expectJson200(r);
        expect(manifest.get(file), file).toMatch(/^[0-9a-f]{64}$/);
        expect(r.headers.get('etag'), path).toBe(etagOf(file));
        expect(r.bytes.equals(treeBytes(file)), path).toBe(true);
        expect(Number(r.headers.get('content-length'))).toBe(r.bytes.length);
      }
    });

    it('answers 304 with no body to If-None-Match with the ETag, a list holding it, or its weak form', async () => {
      for (const path of [...fileBacked().map(([p]) => p), ...computed]) {
        const first = await call(path);
        expectJson200(first);
        const etag = first.headers.get('etag')!;
        for (const inm of [etag, `"0000", ${etag}`, `W/${etag}`, `W/"1111" , W/${etag}`, '*']) {
          const r = await call(path, { headers: { 'If-None-Match': inm } });
          expect(r.status, `${path} If-None-Match: ${inm}`).toBe(304);
          expect(r.bytes.length).toBe(0);
          expect(r.headers.get('etag')).toBe(etag);
          expect(r.headers.get('access-control-allow-origin')).toBe('*');
        }
        const stale = await call(path, { headers: { 'If-None-Match': `"${'0'.repeat(64)}", W/"abc"` } });
        expect(stale.status).toBe(200);
        expect(stale.bytes.equals(first.bytes)).toBe(true);
      }
    });

    it('sets Cache-Control: one policy for release-scoped routes, a shorter one for search', async () => {
      const release = await Promise.all(fileBacked().map(([p]) => call(p)));
      const policies = new Set(release.map((r) => r.headers.get('cache-control')));
      expect(policies.size).toBe(1);
      const [releasePolicy] = policies;
      expect(releasePolicy).toMatch(/public/);
      const search = await call('/search?query=PRR5');
      const searchPolicy = search.headers.get('cache-control');
      expect(searchPolicy).toBeTruthy();
      expect(searchPolicy).not.toBe(releasePolicy);
      expect(maxAge(searchPolicy)).toBeLessThan(maxAge(releasePolicy!));
      // Computed pages of release data are release-scoped too.
      for (const path of computed.slice(1)) expect((await call(path)).headers.get('cache-control')).toBe(releasePolicy);
    });

    it('HEAD answers the same status and headers as GET, with no body', async () => {
      const paths = [
        ...fileBacked().map(([p]) => p),
        ...computed,
        '/genes/Y_RNA', // 409
        '/genes/NO_SUCH_GENE', // 404
        '/genes/PRR5/isoforms?limit=0', // 400
        `/isoforms/${Object.keys(structures)[0]}/structure`, // 307
      ];
      // Framing and per-message headers legitimately differ between a GET and a HEAD, and so does the
      // rate-limit budget, which the GET just spent from.
      const perMessage = [
        'date',
        'transfer-encoding',
        'connection',
        'keep-alive',
        'ratelimit-remaining',
        'ratelimit-reset',
      ];
      const comparable = (h: Headers) => Object.fromEntries([...h.entries()].filter(([k]) => !perMessage.includes(k)));
      for (const path of paths) {
        const get = await call(path);
        const head = await call(path, { method: 'HEAD' });
        expect(head.status, path).toBe(get.status);
        expect(comparable(head.headers), path).toEqual(comparable(get.headers));
        expect(head.bytes.length, path).toBe(0);
      }
    });
  });

  describe('CORS', () => {
    it('allows any origin on 200s, 3xx, 304 and 4xx', async () => {
      const etag = (await call('/genes/PRR5')).headers.get('etag')!;
      const requests: [string, RequestInit][] = [
        ['/genes/PRR5', {}],
        ['/search?query=PRR5', {}],
        ['/genes/PRR5', { headers: { 'If-None-Match': etag } }],
        [`/isoforms/${Object.keys(structures)[0]}/structure`, {}],
        ['/genes/Y_RNA', {}],
        ['/genes/NO_SUCH_GENE', {}],
        ['/genes/PRR5/isoforms?limit=0', {}],
        ['/genes/PRR5', { method: 'POST' }],
        [`${server.base}/nope`, {}],
      ];
      for (const [path, init] of requests) {
        const r = await call(path, {
          ...init,
          headers: { Origin: 'https://example.org', ...(init.headers as Record<string, string>) },
        });
        expect(r.headers.get('access-control-allow-origin'), `${init.method ?? 'GET'} ${path} → ${r.status}`).toBe('*');
      }
    });

    it('answers a preflight with 204, allowing GET and the Authorization header', async () => {
      for (const path of ['/genes/PRR5', '/search?query=PRR5', '/isoforms/PRR5-201/structure']) {
        const r = await call(path, {
          method: 'OPTIONS',
          headers: {
            Origin: 'https://example.org',
            'Access-Control-Request-Method': 'GET',
            'Access-Control-Request-Headers': 'authorization',
          },
        });
        expect(r.status).toBe(204);
        expect(r.bytes.length).toBe(0);
        expect(r.headers.get('access-control-allow-origin')).toBe('*');
        const methods = (r.headers.get('access-control-allow-methods') ?? '')
          .split(',')
          .map((m) => m.trim().toUpperCase());
        expect(methods).toContain('GET');
        const allowed = (r.headers.get('access-control-allow-headers') ?? '')
          .split(',')
          .map((h) => h.trim().toLowerCase());
        expect(allowed).toContain('authorization');
      }
    });

    it('exposes ETag, Link and Location to scripts', async () => {
      const exposed = (
        (await call('/genes/PRR5/isoforms?limit=3')).headers.get('access-control-expose-headers') ?? ''
      ).toLowerCase();
      for (const header of ['etag', 'link', 'location']) expect(exposed).toContain(header);
    });
  });

  describe('path safety', () => {
    // Each must be refused (400) or not found (404) as problem+json: never a file of the tree.
    const encoded = [
      '/api/v1/isoforms/%2e%2e%2f%2e%2e%2fmanifest.json',
      '/api/v1/isoforms/%2E%2E%2F%2E%2E%2Fmanifest.json',
      '/api/v1/genes/..%2f..%2fmanifest',
      '/api/v1/genes/..%2f..%2fmanifest.json',
      '/api/v1/genes/%2e%2e%2f%2e%2e%2fedge%2faliases',
      '/api/v1/isoforms/..%2f..%2f..%2fedge%2fstructures/domains',
      '/api/v1/isoforms/PRR5-201%00',
      '/api/v1/isoforms/PRR5-201%00.json',
      '/api/v1/isoforms/PRR5-201%0a',
      '/api/v1/genes/%E0%A4%A',
      '/api/v1/genes/%ZZ',
      '/api/v1/genes/PRR5%5c..%5c..%5cmanifest.json',
      '/api/v1/genes/..%5c..%5cmanifest.json',
      '/api/v1/genes/%2fetc%2fpasswd',
      '/api/v1/isoforms/PRR5-201%2fdomains',
      '/api/v1/isoforms/%252e%252e%252fmanifest.json', // decoded once only
      `/api/v1/genes/${'A'.repeat(201)}`,
      `/api/v1/isoforms/${'%41'.repeat(3000)}`,
      `/api/v1/genes/${'B'.repeat(8000)}/isoforms`,
      '/structures/..%2fmanifest.json',
      '/structures/%2e%2e%2fmanifest.json',
      '/structures/..%2fapi%2fv1%2frelease.json',
      '/structures/__proto__.cif',
      '/api/v1/genes/__proto__',
      '/api/v1/isoforms/constructor',
    ];

    const label = (path: string) => (path.length > 80 ? `${path.slice(0, 60)}… (${path.length} characters)` : path);
    it.each(encoded.map((path) => [label(path), path]))('refuses %s', async (_, path) => {
      const r = await call(`${server.base}${path}`);
      expect([400, 404], `${path} → ${r.status}`).toContain(r.status);
      expectProblem(r, r.status);
      expect(r.text).not.toContain('"entries"'); // the manifest
      expect(r.text).not.toContain('"service":"isoatlas"'); // the release
    });

    it('decodes a percent-encoded identifier exactly once', async () => {
      const plain = await call(`/isoforms/${PRR5_201.name}`);
      const encodedOnce = await call('/isoforms/%50%52%52%35%2D%32%30%31');
      expectJson200(encodedOnce);
      expect(encodedOnce.bytes.equals(plain.bytes)).toBe(true);
      expectProblem(await call('/isoforms/%2550%2552%2552%2535%252D%2532%2530%2531'), 404);
    });

    // Raw targets: fetch would resolve these dot segments before sending.
    const rawTargets = [
      '/api/v1/genes/../../manifest.json',
      '/api/v1/isoforms/../../../manifest.json',
      '/api/v1/../../../../etc/passwd',
      '/api/v1/genes/../../../edge/index.json',
      '/api/v1/isoforms/.%2e/.%2e/manifest.json',
      '/api/v1/%2e%2e/%2e%2e/manifest.json',
      '/api/v1/genes/PRR5\\..\\..\\..\\manifest.json',
      '/structures/../manifest.json',
      '/structures/../edge/structures/000.json',
      '/structures/..\\manifest.json',
    ];

    it.each(rawTargets)('refuses the raw target %s', async (target) => {
      const r = await raw(target);
      expect([400, 404], `${target} → ${r.status}`).toContain(r.status);
      expectProblem(r, r.status);
      expect(r.text).not.toContain('"entries"');
      expect(r.text).not.toContain('"genes":{');
    });

    it('refuses request targets that are not an absolute path', async () => {
      // Answered by the Node adapter before the edge function (no CORS headers: browsers never send these),
      // and by the nginx front alike (edge/contract/targets.ts): the absolute form too, which no client
      // sends to an origin server and which would let the front and the server read two paths.
      for (const target of ['http://example.org/api/v1/release', '*']) {
        const r = await raw(target, target === '*' ? 'OPTIONS' : 'GET');
        expect(r.status).toBe(400);
        expect(r.headers['content-type']).toBe('application/problem+json; charset=utf-8');
        expect(validate('Problem', JSON.parse(r.text))).toEqual([]);
      }
    });

    // A target starting with `//` must stay a path: resolved as a URL it would name another host, and the
    // structure redirect would point there (an open redirect).
    it('does not let a `//host/…` request target choose the host of the structure redirect', async () => {
      const id = Object.keys(structures)[0];
      const r = await raw(`//evil.example/api/v1/isoforms/${id}/structure`);
      if (r.status === 307) expect(new URL(r.headers.location!).origin).toBe(server.base);
      else expect([400, 404]).toContain(r.status);
    });

    // Node's Request refuses to construct TRACE/TRACK/CONNECT; the adapter answers them 405 itself.
    it('answers 405 to TRACE', async () => {
      expectProblem(await raw('/api/v1/release', 'TRACE'), 405);
    });
  });

  describe('request log', () => {
    it('logs one JSON line per request (time, client, method, path, status, bytes, ms, release, route, request_id), never headers', async () => {
      // The server names what answered and the request's id; nginx's lines for what it answers itself do not.
      const UUID = '[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}';
      const tail = (route: string) =>
        front === 'server'
          ? `,"route":"${route}","request_id":"${UUID}"`
          : `(,"route":"${route}","request_id":"${UUID}")?`;
      const marker = `logcheck${Date.now()}`;
      const secret = `secret-token-${marker}`;
      await call(`/genes/${marker}`, { headers: { Authorization: `Bearer ${secret}` } });
      await call('/genes/PRR5?log=1');
      await call('/release', { method: 'HEAD' });
      await call(`/search?query=${marker}`, { method: 'POST' });
      await call(`/search?query=${marker}`);
      const expected = [
        // An unknown Bearer token is refused (401) before the path is answered; the line names the route asked.
        new RegExp(
          `^\\{"level":"info","time":"[^"]+","client":"[^"]+","method":"GET","path":"/api/v1/genes/${marker}","status":401,"bytes":\\d+,"ms":[\\d.]+,"release":null${tail('gene')}\\}$`,
          'm',
        ),
        /"method":"GET","path":"\/api\/v1\/genes\/PRR5\?log=1","status":400,/,
        new RegExp(
          `"method":"HEAD","path":"/api/v1/release","status":200,"bytes":0,"ms":[\\d.]+,"release":"${literally(releaseOf(tree()))}"${tail('release')}\\}$`,
          'm',
        ),
        new RegExp(`"method":"POST","path":"/api/v1/search\\?query=${marker}","status":405,`),
        new RegExp(`"method":"GET","path":"/api/v1/search\\?query=${marker}","status":200,"bytes":\\d+,`),
      ];
      // The line reaches the pipe around the time the answer does.
      const logs = await server
        .untilLogged((text) => expected.every((re) => re.test(text)), 'the log lines of the requests above')
        .catch(() => server.logs());
      for (const re of expected) expect(logs).toMatch(re);
      expect(logs.split('\n').filter((l) => l.includes(`/search?query=${marker}`))).toHaveLength(2);
      expect(logs).not.toContain(secret);
    });
  });

  describe('every response of this suite', () => {
    // Runs last (tests run in file order): checks every reply recorded above.
    it('was never a 5xx, never HTML, never a stack trace', () => {
      expect(replies.length).toBeGreaterThan(300);
      for (const r of replies) {
        expect(r.status, r.what).toBeLessThan(500);
        expect(r.contentType ?? '', r.what).not.toMatch(/html/);
        expectNoLeak(r.text);
        if (r.status >= 400) expect(r.contentType, r.what).toBe('application/problem+json; charset=utf-8');
      }
    });
  });

  // The server's own: nginx holds a request until it has all of it before passing it on.
  describe.skipIf(front === 'nginx')('graceful shutdown', () => {
    /** Opens a connection and sends all of a request but the blank line that ends its headers. */
    function startRequest(base: string, target: string) {
      const { hostname, port } = new URL(base);
      const socket = net.connect(Number(port), hostname);
      const chunks: Buffer[] = [];
      socket.on('data', (c: Buffer) => chunks.push(c));
      const ended = new Promise<string>((resolve, reject) => {
        socket.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
        socket.on('error', reject);
      });
      const connected = new Promise<void>((resolve) => socket.once('connect', () => resolve()));
      return {
        async begin() {
          await connected;
          socket.write(`GET ${target} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nConnection: close\r\n`);
        },
        async finish() {
          socket.write('\r\n');
          return ended;
        },
      };
    }

    it('finishes in-flight requests after SIGTERM, then exits 0', async () => {
      const second = await startServer({ dir: tree() });
      let stopped: Promise<number | null> | null = null;
      try {
        expectJson200(await call(`${second.api}/genes/PRR5`));
        const inFlight = [
          startRequest(second.base, '/api/v1/genes/PRR5'),
          startRequest(second.base, `/api/v1/isoforms/${PRR5_201.name}/neoantigens?limit=2`),
          startRequest(second.base, '/api/v1/search?query=PRR5'),
        ];
        for (const r of inFlight) await r.begin();
        await new Promise((r) => setTimeout(r, 300)); // let the server read the partial requests

        stopped = second.stop();
        await second.untilLogged((text) => /SIGTERM/.test(text), 'the server to log SIGTERM').catch(() => {});
        expect(second.logs()).toMatch(/SIGTERM/);
        // The listener is closed: a new connection is refused…
        await expect(fetch(`${second.api}/release`)).rejects.toThrow();
        // …but the requests already in flight are answered in full.
        const answers = await Promise.all(inFlight.map((r) => r.finish()));
        for (const answer of answers) {
          const [head, body] = answer.split('\r\n\r\n');
          expect(head).toMatch(/^HTTP\/1\.1 200 /);
          const length = Number(/^content-length: (\d+)$/im.exec(head)?.[1]);
          expect(Buffer.byteLength(body)).toBe(length);
          expect(() => JSON.parse(body)).not.toThrow();
        }
        expect(answers[0].split('\r\n\r\n')[1]).toBe(treeBytes(treePaths.gene(PRR5.id)).toString('utf8'));

        expect(await stopped).toBe(0);
        const logs = second.logs();
        expect(logs).toMatch(/"method":"GET","path":"\/api\/v1\/genes\/PRR5","status":200,/);
        expect(logs).toMatch(/"method":"GET","path":"\/api\/v1\/search\?query=PRR5","status":200,/);
        expect(JSON.parse(logs.trim().split('\n').at(-1)!)).toMatchObject({ level: 'info', event: 'stopped' });
      } finally {
        if (!stopped) await second.stop();
      }
    });
  });
}
