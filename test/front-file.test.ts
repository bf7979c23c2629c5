// The file the server names when the nginx front asks for a request's admission
// (edge/server/front-file.ts): for every request of the tree's files by canonical id, and for names,
// the very file, ETag, coding, Link and cache policy the server answers the request with; none for
// what the server answers otherwise.
import { describe, expect, inject, it } from 'vitest';
import { createHandler, releasesOf } from '../edge/handler.js';
import { withCompression } from '../edge/adapters/compress.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import { contentTypeOf, type ManifestEntry } from '../edge/contract/tree.js';
import { forEachFrontFile } from '../edge/server/nginx-config.js';
import { FRONT_FILE_HEADERS as H, copyPath, frontFile } from '../edge/server/front-file.js';
import { CODING_SUFFIX, type Coding } from '../edge/compression.js';
import { objectKey } from '../edge/contract/store-layout.js';
import Database from 'better-sqlite3';

const tree = () => inject('fixtureTree');
const JSON_TYPE = contentTypeOf('x.json');

async function serverAndRelease() {
  const options = { origin: new LocalTreeOrigin(tree()), serveStructureFiles: true };
  const releases = releasesOf(options);
  const handler = withCompression(createHandler(options, releases), 64 * 1024 * 1024);
  return { handler, releases, release: (await releases.get())! };
}

describe('the file named at admission', () => {
  it('is, for every request of a file by its id, the file the server answers with, in the coding it sends', async () => {
    const requests = new Map<string, ManifestEntry>();
    await forEachFrontFile(tree(), (entry, uris) => {
      for (const uri of uris) requests.set(uri, entry);
    });
    // Every gene and isoform record of the release is among them, by its id.
    const db = new Database(inject('fixtureDb'), { readonly: true });
    const [genes, isoforms] = ['genes', 'isoforms'].map((t) => db.prepare(`SELECT count(*) FROM ${t}`).pluck().get());
    db.close();
    const uris = [...requests.keys()];
    expect(uris.filter((u) => /^\/api\/v1\/genes\/[^/]+$/.test(u)).length).toBe(genes);
    expect(uris.filter((u) => /^\/api\/v1\/isoforms\/[^/]+$/.test(u)).length).toBe(isoforms);
    const { handler, releases, release } = await serverAndRelease();
    const wrong: string[] = [];
    let i = 0;
    for (const [uri, entry] of requests) {
      // Compressing is the costly part: one request in 25 asks for a coding.
      const accept = i++ % 25 === 0 ? (i % 2 ? 'gzip' : 'gzip, deflate, br') : null;
      const headers = new Headers(accept ? { 'Accept-Encoding': accept } : {});
      const named = await frontFile(uri, headers, entry.content_type, release, releases, false);
      const r = await handler(new Request(`http://front${uri}`, { method: 'HEAD', headers }));
      const coding = r.headers.get('content-encoding') as Coding | null;
      const expected = {
        [H.etag]: r.headers.get('etag'),
        ...(coding === null
          ? { [H.file]: `/${entry.path}` }
          : { [H.copy]: `/${copyPath(entry.sha256, CODING_SUFFIX[coding])}`, [H.coding]: coding }),
        ...(r.headers.has('link') ? { [H.link]: r.headers.get('link') } : {}),
      };
      if (
        r.status !== 200 ||
        r.headers.get('content-type') !== entry.content_type ||
        named === null ||
        named.cacheControl !== r.headers.get('cache-control') ||
        JSON.stringify(named.headers) !== JSON.stringify(expected)
      )
        wrong.push(`${uri} ${accept}: ${r.status} ${JSON.stringify(named)} ≠ ${JSON.stringify(expected)}`);
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('resolves names as the server does, and names none for what it answers otherwise', async () => {
    const { release, releases } = await serverAndRelease();
    const name = (target: string, type = JSON_TYPE, store = false) =>
      frontFile(target, new Headers(), type, release, releases, store);
    const gene = await release.data.gene('PRR5');
    expect(typeof gene).toBe('string');
    const byId = await name(`/api/v1/genes/${gene}`);
    expect(byId?.headers[H.file]).toBe(`/api/v1/genes/${gene}.json`);
    for (const alias of ['/api/v1/genes/PRR5', '/api/v1/genes/prr5', `/api/v1/genes/${gene}/`, '/api/v1//genes/PRR5'])
      expect(await name(alias), alias).toEqual(byId);
    // In a mirror, the same file by its object.
    const entry = (await release.origin.entry(`api/v1/genes/${gene}.json`))!;
    expect((await name(`/api/v1/genes/${gene}`, JSON_TYPE, true))?.headers[H.file]).toBe(`/${objectKey(entry.sha256)}`);
    const structure = (await release.data.structure('ENST00000215919.3'))!;
    expect((await name('/structures/ENST00000215919.3.cif', contentTypeOf('x.cif')))?.headers[H.file]).toBe(
      `/${structure.path}`,
    );
    for (const [target, type] of [
      ['/api/v1/genes/PRR5?release=x', JSON_TYPE],
      [`/api/v1/genes/${gene}/isoforms?limit=10`, JSON_TYPE],
      ['/api/v1/genes/NO-SUCH-GENE', JSON_TYPE],
      ['/api/v1/isoforms/PRR5-201/structure', JSON_TYPE],
      ['/api/v1/search', JSON_TYPE],
      ['/api/v1/releases', JSON_TYPE],
      ['/api/v1/docs', JSON_TYPE],
      ['/api/v1/genes/%2e%2e', JSON_TYPE],
      ['/api/v1/genes/a%2Fb', JSON_TYPE],
      [`/api/v1/genes/${gene}`, contentTypeOf('x.cif')],
      ['/structures/ENST00000215919.3.cif', JSON_TYPE],
      ['/releases/another/structures/ENST00000215919.3.cif', contentTypeOf('x.cif')],
      ['/structures/NOT-AN-ISOFORM.cif', contentTypeOf('x.cif')],
      ['/manifest.json', JSON_TYPE],
    ] as const)
      expect(await name(target, type), target).toBeNull();
  });
});
