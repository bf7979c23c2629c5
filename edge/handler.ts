// The edge function: one async (Request) => Response over an origin holding the rendered tree. It
// answers preflights and refuses what is not GET or HEAD, asks access control, pins the release,
// matches the route table and hands the request to the route's module (edge/routes/), carrying a
// release the request named into the answer's links (edge/pinning.ts); every bad input becomes a
// problem+json 4xx, every origin failure a 502/503/504. No framework; Web-standard types only, so
// the Node adapter, Lambda@Edge and tests call the same function.
import { cacheControl, type RouteId } from './contract/routes.js';
import { isVersioned, OriginError, type Origin, type PinnedRelease, type ReleaseFiles, type VersionedOrigin } from './origin.js';
import { ReleaseData } from './release-data.js';
import { VerifiedOrigin, type VerifiedOriginOptions } from './origins/verified.js';
import { matchRoute, parseQuery, RequestProblem, type Match } from './router.js';
import { ALLOW, PREFLIGHT_HEADERS, bodyResponse, problem, sha256Hex } from './responses.js';
import type { AccessControl } from './access/control.js';
import { clip, redactKeys } from './access/key-format.js';
import { routeHandlers } from './routes/index.js';
import type { Release, Releases } from './routes/context.js';
import type { ReleaseListBody } from './contract/schemas.js';
import { RELEASE_HEADER } from './contract/routes.js';
import { askedRelease, pinnedAnswer } from './pinning.js';
import { API_PREFIX } from './contract/tree.js';
import { REQUEST_ID_HEADER } from './contract/http-headers.js';
import { RELEASE_STRUCTURE_PATH, structureFile } from './routes/structure.js';
import { docsAsset, docsAssetName } from './routes/docs.js';
import { HISTORY_KEY, POINTER_KEY, objectSha } from './contract/store-layout.js';
import { IntegrityError } from './origins/verified.js';

export interface HandlerOptions {
  /** The tree: one release (a directory, a base URL) or a published bucket with a release pointer. */
  origin: Origin | VersionedOrigin;
  /** Base URL the structure redirect points into (`<base>/structures/<id>.cif`). Default: none, the
   * redirect is root-relative (right for a server that also serves the files, and for the CDN). */
  structureBaseUrl?: string;
  /** Serve the structure files (`/structures/<id>.cif` of a tree, `/releases/<r>/structures/<id>.cif`
   * of a store) itself: the local server and mirrors (the CDN gets them from the bucket). */
  serveStructureFiles?: boolean;
  /** A store's own files (current.json, releases.json, objects/…), served as they are so that other
   * mirrors can sync from this server. */
  storeFiles?: Origin;
  /** API keys and rate limits; without it every request is served. */
  access?: AccessControl;
  /** Memory for verified file bodies, per release (default 16 MiB; a local server affords more). */
  bodyCacheBytes?: number;
  /** Hears of files that fail verification (the local server's /health counts them). */
  onVerificationFailure?: VerifiedOriginOptions['onFailure'];
}

/** Facts about the request that only the adapter knows and the client cannot forge, and what the
 * handler says back about it. */
export interface RequestContext {
  clientIp?: string;
  /** The request came through a front the server trusts (its peer is one), which named the client. */
  viaFront?: boolean;
  /** The adapter's id for this request: an unexpected failure's answer and log line carry it. */
  requestId?: string;
  /** Set by the handler: what answered the request, for the log and metrics. */
  answeredBy?: AnswerLabel;
}

/** What answers a request, from a bounded set: a route of the table, one of the kinds of files
 * served beside it, or an endpoint of the server around the handler (edge/server/serve.ts). */
export type AnswerLabel = RouteId | 'docs_file' | 'structure_file' | 'store_file' | 'health' | 'metrics' | 'admission' | 'other';

export type Handler = (request: Request, context?: RequestContext) => Promise<Response>;

export function createHandler(options: HandlerOptions, releases: Releases = releasesOf(options)): Handler {
  const keyRequired = options.access?.mode === 'key-required';

  return async (request, context = {}) => {
    try {
      const target = targetOf(request, releases, options);
      context.answeredBy = target.label;
      // Preflights carry no credentials (browsers never send Authorization with them): not counted.
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return problem(request, { status: 405, detail: `method ${request.method} is not allowed; this API is read-only`, headers: { Allow: ALLOW } });
      }
      const decision = options.access ? await options.access.decide(request, context.clientIp) : null;
      if (decision?.denied) return decision.denied;
      const response = await target.answer();
      if (decision) for (const [name, value] of Object.entries(decision.headers)) response.headers.set(name, value);
      // With keys required, every answer served was asked with a key: no shared cache in front of
      // this server may hand it to a client without one.
      if (keyRequired) keepPrivate(response);
      return response;
    } catch (err) {
      return failure(request, err, context.requestId);
    }
  };
}

/** What a request asks for, decided once from its path (metrics count what it names), and how it is
 * answered from the release it names or the current one, once access control has let it through. */
interface Target {
  label: AnswerLabel;
  answer: () => Promise<Response>;
}

function targetOf(request: Request, releases: Releases, options: HandlerOptions): Target {
  const url = new URL(request.url);
  if (options.serveStructureFiles && url.pathname.startsWith('/structures/')) {
    const name = url.pathname.slice('/structures/'.length);
    return {
      label: 'structure_file',
      async answer() {
        if (name.includes('/') || url.search) return problem(request, { status: 404, detail: `no structure file ${url.pathname}` });
        const release = (await releases.get())!;
        return named(await structureFile(request, release, name), release);
      },
    };
  }
  const inRelease = options.serveStructureFiles ? RELEASE_STRUCTURE_PATH.exec(url.pathname) : null;
  if (inRelease) {
    return {
      label: 'structure_file',
      async answer() {
        const release = await releases.get(inRelease[1]);
        if (!release || url.search) return problem(request, { status: 404, detail: `no structure file ${clip(url.pathname, 200)}` });
        return named(await structureFile(request, release, inRelease[2]), release);
      },
    };
  }
  if (options.storeFiles && isStoreFile(url.pathname.slice(1))) return { label: 'store_file', answer: () => storeFile(request, options.storeFiles!, url.pathname.slice(1)) };
  const asset = docsAssetName(url.pathname);
  if (asset !== null) {
    return {
      label: 'docs_file',
      async answer() {
        const asked = askedRelease((name) => url.searchParams.get(name));
        const release = await releases.get(asked.name);
        if (!release) return noSuchRelease(request, asked.name!);
        return named(await docsAsset(request, release, asset), release);
      },
    };
  }
  let matched: Match | null;
  try {
    matched = matchRoute(url.pathname);
  } catch (err) {
    // A path the router refuses is answered after access control, like any other.
    return { label: 'other', answer: () => Promise.reject(err) };
  }
  if (!matched) {
    return { label: 'other', answer: async () => problem(request, { status: 404, detail: `no endpoint at ${clip(url.pathname, 200)}; the API lives under /api/v1/ (see /api/v1/openapi.json)` }) };
  }
  const { route, params } = matched;
  return {
    label: route.id,
    async answer() {
      const query = parseQuery(route, url.searchParams);
      const asked = askedRelease((name) => query.strings[name]);
      const release = await releases.get(asked.name);
      if (!release) return noSuchRelease(request, asked.name!);
      // Links carry only a release the request named; the gate's default stays out of them.
      const pin = asked.carried ? asked.name : undefined;
      const answer = (request: Request) =>
        routeHandlers[route.id]({ request, url, params, query, cacheControl: cacheControl[route.cache], release, releases, structureBaseUrl: options.structureBaseUrl, pin });
      return named(pin === undefined ? await answer(request) : await pinnedAnswer(request, route.schema, pin, answer), release);
    },
  };
}

const noSuchRelease = (request: Request, name: string) =>
  problem(request, { status: 404, detail: `no release "${clip(name, 100)}" in this atlas; GET ${API_PREFIX}/releases lists them` });

/** The files a mirror syncs from: the pointer, the history and the objects (by their exact names). */
const isStoreFile = (path: string) => path === POINTER_KEY || path === HISTORY_KEY || objectSha(path) !== null;

/** A store file as it is; an object only when its bytes hash to its name. */
async function storeFile(request: Request, store: Origin, path: string): Promise<Response> {
  const file = await store.read(path);
  if (!file) return problem(request, { status: 404, detail: `no ${path} in this mirror` });
  const sha = objectSha(path);
  if (sha !== null && (await sha256Hex(file.body)) !== sha) throw new IntegrityError(`${path} does not hash to its name`);
  const cache = sha === null ? 'no-cache' : 'public, max-age=31536000, immutable';
  return bodyResponse(request, file.body, { cacheControl: cache, sha256: sha ?? undefined, contentType: sha === null ? undefined : 'application/octet-stream' });
}

/** Every answer from a release names it. */
async function named(response: Response, release: Release): Promise<Response> {
  response.headers.set(RELEASE_HEADER, await release.name());
  return response;
}

/** The releases requests are answered from: the one tree, or a release of a store (the current one,
 * or one named). Each request is answered from one pinned release; the releases used lately are
 * kept open, so requests in flight finish on theirs. */
export function releasesOf(options: Pick<HandlerOptions, 'origin' | 'bodyCacheBytes' | 'onVerificationFailure'>): Releases {
  const open = (files: ReleaseFiles, publicPath: (path: string) => string): Release => {
    // Every file, edge data included, is checked against the manifest before it is used.
    const verified = new VerifiedOrigin(files, { bodyCacheBytes: options.bodyCacheBytes, onFailure: options.onVerificationFailure });
    return { origin: verified, data: new ReleaseData(verified), publicPath, name: () => verified.releaseName() };
  };
  const source = options.origin;
  // A tree (or a server's one directory) holds one release: asked by its own name, or not named.
  const onlyIf = async (release: Release, name: string | undefined) => (name === undefined || (await release.name()) === name ? release : null);
  const single = async (release: Release): Promise<ReleaseListBody> => {
    const name = await release.name();
    return { current: name, releases: [{ release: name, current: true, published_at: null, manifest_sha256: null }] };
  };
  if (!isVersioned(source)) {
    const tree = open(source, (path) => path);
    return { get: (name) => onlyIf(tree, name), list: () => single(tree) };
  }
  const byRelease = new Map<PinnedRelease, Release>();
  const get = async (name?: string) => {
    const pinned = await source.pin(name);
    if (!pinned) return null;
    let release = byRelease.get(pinned);
    if (!release) {
      release = open(pinned.files, pinned.publicPath);
      byRelease.set(pinned, release);
      if (byRelease.size > 3) byRelease.delete(byRelease.keys().next().value!);
    }
    return onlyIf(release, name);
  };
  return {
    get,
    async list() {
      if (!source.list) return single((await get())!);
      const { current, releases } = await source.list();
      return { current, releases: releases.map((r) => ({ release: r.release, current: r.release === current, published_at: r.published_at, manifest_sha256: r.manifest_sha256 })) };
    },
  };
}

/** Marks a keyed answer as for its client only (`private`, varying by Authorization). */
export function keepPrivate(response: Response): void {
  const cache = response.headers.get('cache-control');
  if (cache !== null && cache !== 'no-store') response.headers.set('cache-control', cache.replace(/^public\b/, 'private'));
  response.headers.append('vary', 'Authorization');
}

/** The problem response for anything thrown while answering; an unexpected failure's answer and log
 * line carry the request's id, when the adapter gave one, so a report can be matched to the log. */
export function failure(request: Request, err: unknown, requestId?: string): Response {
  if (err instanceof RequestProblem) {
    return problem(request, { status: err.status, detail: err.message, extra: err.parameter ? { parameter: err.parameter } : undefined });
  }
  if (err instanceof OriginError) {
    const [status, detail] =
      err.kind === 'timeout'
        ? [504, 'the atlas storage did not answer in time; try again shortly']
        : err.kind === 'overloaded'
          ? [503, 'the atlas storage is busy; try again shortly']
          : [502, 'the atlas storage did not answer as expected; try again shortly'];
    return problem(request, { status, detail, headers: { 'Retry-After': '5' } });
  }
  // A bug of ours, not the client's: say so without leaking internals.
  console.error(`isoatlas edge: unexpected error${requestId ? ` (request ${requestId})` : ''}: ${redactKeys(String((err as Error)?.stack ?? err))}`);
  return problem(request, {
    status: 500,
    detail: 'an unexpected error occurred; it has been logged',
    ...(requestId ? { extra: { request_id: requestId }, headers: { [REQUEST_ID_HEADER]: requestId } } : {}),
  });
}
