// The one endpoint of every route that is a file of the tree (edge/contract/routes.ts, `file`): the
// release metadata and the OpenAPI document as they are, and each resource keyed by a gene or an
// isoform, whose name in the request is resolved to the canonical id that names its file. A list
// file is cut to the request's window: a `prefix` list holds the first items up to the largest
// limit, a smaller limit is its prefix; a `pages` list is pre-split into pages of the largest limit,
// a request on that grid is a page as it is and any other window is cut from the pages it overlaps.
import { isKeyedFile, listSize, type FileBacking, type Route } from '../contract/routes.js';
import { keyedFilePath, linkTo, namedFilePath } from '../contract/tree.js';
import { bodyResponse, jsonBody } from '../responses.js';
import {
  fileAnswer,
  mustRead,
  resolveGene,
  resolveIsoform,
  type Release,
  type Resolved,
  type RouteHandler,
  type RouteRequest,
} from './route-request.js';

type KeyedRoute = Route & { file: Extract<FileBacking, { per: string }> };

/** What a `prefix` list file holds: its items and the limit it was cut at. */
interface PrefixList {
  limit: number;
  items: unknown[];
}
/** What each page of a `pages` list holds: its window of the items, and the link to the next one. */
interface Page {
  total: number;
  limit: number;
  offset: number;
  next: string | null;
  items: unknown[];
}

const decoder = new TextDecoder();
const parse = <T>(bytes: Uint8Array) => JSON.parse(decoder.decode(bytes)) as T;

/** A file of the tree that answers a request as it is, and the headers its answer adds (a page's Link). */
export interface FileAsIs {
  path: string;
  headers?: Record<string, string>;
}

/** How a route declared as a file answers a request: with a file as it is, or (`answer`) otherwise: a
 * window cut from a list file, or the 404 or 409 of a key that names no one gene or isoform. The
 * endpoint answers either; the nginx front's admission (edge/server/front-file.ts) lets nginx send
 * the file itself, so both choose it here. */
export type TreeFileChoice = FileAsIs | { answer: () => Promise<Response> };

export function treeFileOf(route: Route): (request: RouteRequest) => Promise<TreeFileChoice> {
  if (!route.file) throw new Error(`route ${route.id} is not declared as a file of the tree`);
  if ('name' in route.file) {
    const path = namedFilePath(route.file);
    return async () => ({ path });
  }
  if (!isKeyedFile(route)) throw new Error(`route ${route.id}: a file is named or keyed`);
  const window = route.file.window;
  const choose = window === 'pages' ? pageChoice : window === 'prefix' ? prefixChoice : wholeChoice;
  return async (request) => {
    const id = await resolve(route, request);
    return typeof id === 'string' ? choose(route, request, id) : id;
  };
}

/** The endpoint of a route declared as a file. */
export function treeFileEndpoint(route: Route): RouteHandler {
  const choose = treeFileOf(route);
  return async (request) => {
    const choice = await choose(request);
    return 'answer' in choice ? choice.answer() : fileAnswer(request, choice.path, choice.headers);
  };
}

/** The canonical id the route's one path parameter names, or the answer to send instead (404, 409). */
function resolve(route: KeyedRoute, request: RouteRequest): Promise<Resolved> {
  const key = request.params[route.pathParams[0].name];
  return route.file.per === 'gene' ? resolveGene(request, key) : resolveIsoform(request, key);
}

const wholeChoice = async (route: KeyedRoute, _request: RouteRequest, id: string): Promise<TreeFileChoice> => ({
  path: keyedFilePath(route, id),
});

async function prefixChoice(route: KeyedRoute, request: RouteRequest, id: string): Promise<TreeFileChoice> {
  const path = keyedFilePath(route, id);
  const limit = request.query.integers.limit;
  // A limit as large as the file's list is the file itself, served unparsed.
  if (limit >= listSize(route)) return { path };
  return {
    async answer() {
      const list = parse<PrefixList>((await mustRead(request.release, path)).body);
      return bodyResponse(request.request, jsonBody({ ...list, limit, items: list.items.slice(0, limit) }), {
        cacheControl: request.cacheControl,
      });
    },
  };
}

async function pageChoice(route: KeyedRoute, request: RouteRequest, id: string): Promise<TreeFileChoice> {
  const size = listSize(route);
  const { limit, offset } = request.query.integers;
  if (limit === size && offset % size === 0) {
    const path = keyedFilePath(route, id, offset / size);
    const file = await request.release.origin.read(path);
    // Past the last page there is no file: the window is cut (empty) like any other.
    if (file) return { path, headers: nextLink(nextOfPage(file)) };
  }
  return {
    async answer() {
      const body = await window(route, request.release, id, limit, offset);
      return bodyResponse(request.request, jsonBody(body), {
        cacheControl: request.cacheControl,
        headers: nextLink(body.next),
      });
    },
  };
}

/** Each page's link to the next, read once per body the origin's verified cache holds (a page asked
 * again is not parsed again: the body is the same object while the cache keeps it). */
const pageNexts = new WeakMap<object, string | null>();
function nextOfPage(file: { body: Uint8Array }): string | null {
  let next = pageNexts.get(file);
  if (next === undefined) pageNexts.set(file, (next = parse<Page>(file.body).next));
  return next;
}

/** RFC 8288 Link to the next page, when there is one. */
function nextLink(next: string | null): Record<string, string> | undefined {
  return next ? { Link: `<${next}>; rel="next"` } : undefined;
}

/** The window [offset, offset + limit) of a list, from the pre-split pages it overlaps: the first
 * page's other members as they are, its window members for this window. */
async function window(route: KeyedRoute, release: Release, id: string, limit: number, offset: number): Promise<Page> {
  const size = listSize(route);
  const page = async (n: number) => parse<Page>((await mustRead(release, keyedFilePath(route, id, n))).body);
  const first = await page(0);
  const firstPage = Math.floor(offset / size);
  const lastPage = Math.min(Math.floor((offset + limit - 1) / size), Math.max(0, Math.ceil(first.total / size) - 1));
  const items = [];
  for (let n = firstPage; n <= lastPage; n++) items.push(...(n === 0 ? first : await page(n)).items);
  const start = offset - firstPage * size;
  const next = offset + limit < first.total ? linkTo(route, id, { limit, offset: offset + limit }) : null;
  return { ...first, limit, offset, next, items: offset >= first.total ? [] : items.slice(start, start + limit) };
}
