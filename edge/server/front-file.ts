// The file the nginx front sends for a request, named by the server when nginx asks for the request's
// admission (edge/server/serve.ts): the file the handler would answer the same request with as it
// is, found as the handler finds it (the dispatch table, the route's file choice in
// edge/endpoints/tree-file.ts, the release's manifest shard by shard through its cache), and the
// representation the server would send of it (edge/adapters/compress.ts). nginx holds no list of
// files: its memory does not grow with the release.
import { cacheControl } from '../contract/routes.js';
import { dispatch } from '../contract/dispatch.js';
import { contentTypeOf, treePaths } from '../contract/tree.js';
import { objectKey } from '../contract/store-layout.js';
import { refusedTarget } from '../contract/targets.js';
import { parseQuery } from '../router.js';
import { askedRelease } from '../pinning.js';
import { treeFileOf, type FileAsIs, type TreeFileChoice } from '../endpoints/tree-file.js';
import type { Release, Releases } from '../endpoints/route-request.js';
import { routes } from '../contract/routes.js';
import { CODING_SUFFIX, MIN_COMPRESSED_BYTES, isCompressible, negotiate, representationTag } from '../compression.js';

/** The request headers in which the front names the request it asks about: its target as sent, and
 * the content type it sends a file of that path with. */
export const FRONT_TARGET_HEADER = 'X-Isoatlas-Front-Target';
export const FRONT_TYPE_HEADER = 'X-Isoatlas-Front-Type';
/** The admission's headers naming what nginx sends: the file, rooted in the served directory (a
 * tree path, or a mirror's object), or its compressed copy, rooted in the copies' directory
 * (edge/server/nginx-compressed.ts); its ETag, its coding and any header the answer adds. */
export const FRONT_FILE_HEADERS = {
  file: 'X-Isoatlas-Front-File',
  copy: 'X-Isoatlas-Front-Copy',
  etag: 'X-Isoatlas-Front-Etag',
  coding: 'X-Isoatlas-Front-Coding',
  link: 'X-Isoatlas-Front-Link',
} as const;

/** Where a file's copy in a coding lives among the copies: `<sha256[0:2]>/<sha256><suffix>`. */
export const copyPath = (sha256: string, suffix: string) => `${sha256.slice(0, 2)}/${sha256}${suffix}`;

export interface FrontFile {
  /** The admission's headers for it (FRONT_FILE_HEADERS). */
  headers: Record<string, string>;
  cacheControl: string;
}

const fileChoices = new Map<string, ReturnType<typeof treeFileOf>>(
  routes.flatMap((route) => ('file' in route ? [[route.id, treeFileOf(route)] as const] : [])),
);

/** The file the handler answers the request (`target`, as sent; `headers`, the request's own) with
 * as it is from `release` (the current one), when the front sends files of that content type; null
 * when the answer is anything else (computed, a problem, a query, another release's, a refused
 * target): the server answers those itself. `store`: the served directory is a mirror's store,
 * which holds files by sha256. */
export async function frontFile(
  target: string,
  headers: Headers,
  type: string,
  release: Release,
  releases: Releases,
  store: boolean,
): Promise<FrontFile | null> {
  if (refusedTarget(target)) return null;
  const url = new URL(target, 'http://front');
  if (url.search !== '') return null;
  const found = await fileOf(url, headers, release, releases);
  if (found === null) return null;
  const { path, extra, contentType, cache } = found;
  if (contentType !== type) return null;
  const entry = await release.origin.entry(path);
  if (!entry) return null;
  const coding =
    isCompressible(contentType) && entry.size >= MIN_COMPRESSED_BYTES
      ? negotiate(headers.get('accept-encoding'))
      : null;
  const named: Record<string, string> = { [FRONT_FILE_HEADERS.etag]: representationTag(entry.sha256, coding) };
  if (coding === null) named[FRONT_FILE_HEADERS.file] = `/${store ? objectKey(entry.sha256) : path}`;
  else {
    named[FRONT_FILE_HEADERS.copy] = `/${copyPath(entry.sha256, CODING_SUFFIX[coding])}`;
    named[FRONT_FILE_HEADERS.coding] = coding;
  }
  if (extra?.Link) named[FRONT_FILE_HEADERS.link] = extra.Link;
  return { headers: named, cacheControl: cache };
}

/** The tree path the handler answers the URL with as it is, the headers it adds, its content type
 * and cache policy; null when it answers otherwise. */
async function fileOf(
  url: URL,
  headers: Headers,
  release: Release,
  releases: Releases,
): Promise<{ path: string; extra?: Record<string, string>; contentType: string; cache: string } | null> {
  const dispatched = dispatch(url.pathname, { structureFiles: true, storeFiles: false });
  if (dispatched.group === 'file') {
    if (dispatched.id !== 'structure_file') return null;
    const { release: pinned, name } = dispatched.match;
    if (pinned === null ? name.includes('/') : pinned !== (await release.name())) return null;
    const id = name.endsWith('.cif') ? name.slice(0, -4) : null;
    const entry = id === null ? null : await release.data.structure(id);
    if (!entry || entry.path !== treePaths.structureFile(id!)) return null;
    return { path: entry.path, contentType: contentTypeOf(entry.path), cache: cacheControl.release };
  }
  if (dispatched.group !== 'route') return null;
  const { route, params } = dispatched.match;
  const choose = fileChoices.get(route.id);
  if (!choose) return null;
  const query = parseQuery(route, url.searchParams);
  // No query: the current release, as the handler picks it.
  if (askedRelease((name) => query.strings[name]).name !== undefined) return null;
  const choice: TreeFileChoice = await choose({
    request: new Request(url, { headers }),
    url,
    params,
    query,
    cacheControl: cacheControl[route.cache],
    release,
    releases,
  });
  if ('answer' in choice) return null;
  const { path, headers: extra }: FileAsIs = choice;
  return { path, extra, contentType: contentTypeOf(path), cache: cacheControl[route.cache] };
}
