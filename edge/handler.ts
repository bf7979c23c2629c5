// The edge function: one async (Request) => Response over an origin holding the rendered tree. It
// finds what the path names in the dispatch table (edge/contract/dispatch.ts), answers preflights
// and refuses what is not GET or HEAD, asks access control, pins the release, and answers the file
// kind or hands the request to the route's module (edge/endpoints/), carrying a release the request
// named into the answer's links (edge/pinning.ts); every bad input becomes a problem+json 4xx, every
// origin failure a 502/503/504. No framework; Web-standard types only, so the Node adapter,
// Lambda@Edge and tests call the same function.
import { cacheControl } from './contract/routes.js';
import { dispatch, type AnswerLabel, type Dispatched } from './contract/dispatch.js';
import {
  isVersioned,
  OriginError,
  type Origin,
  type PinnedRelease,
  type ReleaseFiles,
  type VersionedOrigin,
} from './origin.js';
import { ReleaseData } from './release-data.js';
import { VerifiedOrigin, type VerifiedOriginOptions } from './origins/verified.js';
import { LoadingCache } from './loading-cache.js';
import type { IndexedShardObject } from './contract/manifest.js';
import { parseQuery, RequestProblem } from './router.js';
import { ALLOW, PREFLIGHT_HEADERS, bodyResponse, problem, sha256Hex } from './responses.js';
import type { AccessControl } from './access/control.js';
import { clip } from './access/redaction.js';
import { consoleLog, errorFields, type HandlerLog } from './handler-log.js';
import { routeHandlers } from './endpoints/bindings.js';
import type { Release, Releases } from './endpoints/route-request.js';
import { HISTORY_DEPTH } from './endpoints/id-history.js';
import type { ReleaseListBody } from './contract/schemas.js';
import { RELEASE_HEADER } from './contract/routes.js';
import { askedRelease, pinnedAnswer } from './pinning.js';
import { API_PREFIX } from './contract/tree.js';
import { REQUEST_ID_HEADER } from './contract/http-headers.js';
import { structureFile } from './endpoints/structure-redirect.js';
import { docsAsset } from './endpoints/docs-page.js';
import { objectSha } from './contract/store-layout.js';
import { IntegrityError } from './origins/verified.js';
import { StorePacks } from './origins/store-packs.js';
import { packSha } from './contract/packs.js';
import { packFile } from './endpoints/pack-file.js';
import { requestUrl } from './request-url.js';

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
   * mirrors can sync from this server, and its releases' packs (packs/…), streamed from its objects. */
  storeFiles?: Origin;
  /** API keys and rate limits; without it every request is served. */
  access?: AccessControl;
  /** Memory for verified file bodies, per release (default 16 MiB; a local server affords more). */
  bodyCacheBytes?: number;
  /** Hears of files that fail verification (the local server's /health counts them). */
  onVerificationFailure?: VerifiedOriginOptions['onFailure'];
  /** Where unexpected failures and refused files are logged (default: one JSON line on stderr);
   * `isoatlas serve` passes the process's logger. */
  log?: HandlerLog;
}

/** Facts about the request that only the adapter knows and the client cannot forge, and what the
 * handler says back about it. */
export interface RequestContext {
  clientIp?: string;
  /** The request came through a front the server trusts (its peer is one), which named the client. */
  viaFront?: boolean;
  /** That front counted this anonymous request itself (edge/server/front-count.ts): not again here. */
  countedByFront?: boolean;
  /** The adapter's id for this request: an unexpected failure's answer and log line carry it. */
  requestId?: string;
  /** Set by the handler, or by the server for its system paths: what answered the request (an entry of
   * the dispatch table, edge/contract/dispatch.ts), for the log and metrics. */
  answeredBy?: AnswerLabel;
}

export type Handler = (request: Request, context?: RequestContext) => Promise<Response>;

export function createHandler(options: HandlerOptions, releases: Releases = releasesOf(options)): Handler {
  const keyRequired = options.access?.mode === 'key-required';
  const packs = options.storeFiles && new StorePacks(options.storeFiles);

  return async (request, context = {}) => {
    try {
      const target = targetOf(request, releases, options, packs);
      context.answeredBy = target.label;
      // Preflights carry no credentials (browsers never send Authorization with them): not counted.
      if (request.method === 'OPTIONS') return new Response(null, { status: 204, headers: PREFLIGHT_HEADERS });
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return problem(request, {
          status: 405,
          detail: `method ${request.method} is not allowed; this API is read-only`,
          headers: { Allow: ALLOW },
        });
      }
      const decision = options.access
        ? await options.access.decide(request, context.clientIp, { countedByFront: context.countedByFront })
        : null;
      if (decision?.denied) return decision.denied;
      const response = await target.answer();
      if (decision) for (const [name, value] of Object.entries(decision.headers)) response.headers.set(name, value);
      // With keys required, every answer served was asked with a key: no shared cache in front of
      // this server may hand it to a client without one.
      if (keyRequired) keepPrivate(response);
      return response;
    } catch (err) {
      return failure(request, err, context.requestId, options.log);
    }
  };
}

/** What a request asks for, decided once from its path by the dispatch table (metrics count what it
 * names), and how it is answered from the release it names or the current one, once access control
 * has let it through. */
interface Target {
  label: AnswerLabel;
  answer: () => Promise<Response>;
}

function targetOf(request: Request, releases: Releases, options: HandlerOptions, packs?: StorePacks): Target {
  const url = requestUrl(request);
  const dispatched = dispatch(url.pathname, {
    structureFiles: options.serveStructureFiles === true,
    storeFiles: options.storeFiles !== undefined,
  });
  if (dispatched.group === 'file')
    return { label: dispatched.id, answer: fileAnswer(request, url, releases, options, dispatched, packs) };
  // A path the router refuses is answered after access control, like any other.
  if (dispatched.group === 'none' && dispatched.refusal !== undefined)
    return { label: 'other', answer: () => Promise.reject(dispatched.refusal) };
  // No entry, or a system path: the server around the handler answers those (edge/server/serve.ts).
  if (dispatched.group !== 'route') {
    return {
      label: 'other',
      answer: async () =>
        problem(request, {
          status: 404,
          detail: `no endpoint at ${clip(url.pathname, 200)}; the API lives under /api/v1/ (see /api/v1/openapi.json)`,
        }),
    };
  }
  const { route, params } = dispatched.match;
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
        routeHandlers[route.id]({
          request,
          url,
          params,
          query,
          cacheControl: cacheControl[route.cache],
          release,
          releases,
          structureBaseUrl: options.structureBaseUrl,
          pin,
        });
      return named(
        pin === undefined ? await answer(request) : await pinnedAnswer(request, route.schema, pin, answer),
        release,
      );
    },
  };
}

type FileDispatch = Extract<Dispatched, { group: 'file' }>;

/** How each kind of file of the dispatch table is answered, once access control let it through. */
function fileAnswer(
  request: Request,
  url: URL,
  releases: Releases,
  options: HandlerOptions,
  file: FileDispatch,
  packs?: StorePacks,
): () => Promise<Response> {
  switch (file.id) {
    case 'docs_file':
      return async () => {
        const asked = askedRelease((name) => url.searchParams.get(name));
        const release = await releases.get(asked.name);
        if (!release) return noSuchRelease(request, asked.name!);
        return named(await docsAsset(request, release, file.match.name), release);
      };
    case 'structure_file':
      return async () => {
        const { release: pinned, name } = file.match;
        if (pinned === null) {
          if (name.includes('/') || url.search)
            return problem(request, { status: 404, detail: `no structure file ${url.pathname}` });
          const release = (await releases.get())!;
          return named(await structureFile(request, release, name), release);
        }
        const release = await releases.get(pinned);
        if (!release || url.search)
          return problem(request, { status: 404, detail: `no structure file ${clip(url.pathname, 200)}` });
        return named(await structureFile(request, release, name), release);
      };
    case 'store_file': {
      const pack = packSha(file.match.key);
      return pack === null
        ? () => storeFile(request, options.storeFiles!, file.match.key, options.onVerificationFailure)
        : () => packFile(request, packs!, pack);
    }
  }
}

const noSuchRelease = (request: Request, name: string) =>
  problem(request, {
    status: 404,
    detail: `no release "${clip(name, 100)}" in this atlas; GET ${API_PREFIX}/releases lists them`,
  });

/** A store file as it is; an object only when its bytes hash to its name (else refused, and the
 * listener told, as a file of a release is). */
async function storeFile(
  request: Request,
  store: Origin,
  path: string,
  onFailure: HandlerOptions['onVerificationFailure'],
): Promise<Response> {
  const file = await store.read(path);
  if (!file) return problem(request, { status: 404, detail: `no ${path} in this mirror` });
  const sha = objectSha(path);
  if (sha !== null && (await sha256Hex(file.body)) !== sha) {
    const recheck = async () => {
      const again = await store.read(path).catch(() => null);
      return again !== null && (await sha256Hex(again.body)) === sha;
    };
    onFailure?.({ path, sha256: sha, recheck });
    throw new IntegrityError(`${path} does not hash to its name`);
  }
  const cache = sha === null ? 'no-cache' : 'public, max-age=31536000, immutable';
  return bodyResponse(request, file.body, {
    cacheControl: cache,
    sha256: sha ?? undefined,
    contentType: sha === null ? undefined : 'application/octet-stream',
  });
}

/** Every answer from a release names it. */
async function named(response: Response, release: Release): Promise<Response> {
  response.headers.set(RELEASE_HEADER, await release.name());
  return response;
}

/** What releases opened only to look an id up in keep (edge/endpoints/id-history.ts): how many stay
 * open, and each one's verified bodies (its edge index) and edge data (the alias shards asked). */
const LOOKUP_MEMORY = { releases: HISTORY_DEPTH, bodies: 1024 * 1024, data: 2 * 1024 * 1024 };

/** The releases requests are answered from: the one tree, or a release of a store (the current one,
 * or one named). Each request is answered from one pinned release; the releases used lately are
 * kept open, so requests in flight finish on theirs. */
export function releasesOf(
  options: Pick<HandlerOptions, 'origin' | 'bodyCacheBytes' | 'onVerificationFailure' | 'log'>,
): Releases {
  // Releases of a store share manifest shard objects (delta chains): one cache holds them for all.
  const shardObjects = new LoadingCache<IndexedShardObject>(16 * 1024 * 1024);
  const open = (files: ReleaseFiles, publicPath: (path: string) => string, memory?: typeof LOOKUP_MEMORY): Release => {
    // Every file, edge data included, is checked against the manifest before it is used.
    const verified = new VerifiedOrigin(files, {
      shardObjects,
      bodyCacheBytes: memory?.bodies ?? options.bodyCacheBytes,
      onFailure: options.onVerificationFailure,
      log: options.log,
    });
    const data = new ReleaseData(verified, memory?.data);
    return { origin: verified, data, publicPath, name: () => verified.releaseName() };
  };
  const source = options.origin;
  // A tree (or a server's one directory) holds one release: asked by its own name, or not named.
  const onlyIf = async (release: Release, name: string | undefined) =>
    name === undefined || (await release.name()) === name ? release : null;
  const single = async (release: Release): Promise<ReleaseListBody> => {
    const name = await release.name();
    return { current: name, releases: [{ release: name, current: true, published_at: null, manifest_sha256: null }] };
  };
  if (!isVersioned(source)) {
    const tree = open(source, (path) => path);
    return { get: (name) => onlyIf(tree, name), list: () => single(tree), lookup: (name) => onlyIf(tree, name) };
  }
  const byRelease = new Map<PinnedRelease, Release>();
  const forLookup = new Map<PinnedRelease, Release>();
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
  const lookup = async (name: string) => {
    const pinned = await source.pin(name);
    if (!pinned) return null;
    let release = byRelease.get(pinned) ?? forLookup.get(pinned);
    if (!release) {
      release = open(pinned.files, pinned.publicPath, LOOKUP_MEMORY);
      forLookup.set(pinned, release);
      if (forLookup.size > LOOKUP_MEMORY.releases) forLookup.delete(forLookup.keys().next().value!);
    }
    return onlyIf(release, name);
  };
  return {
    get,
    lookup,
    async list() {
      if (!source.list) return single((await get())!);
      const { current, releases } = await source.list();
      return {
        current,
        releases: releases.map((r) => ({
          release: r.release,
          current: r.release === current,
          published_at: r.published_at,
          manifest_sha256: r.manifest_sha256,
        })),
      };
    },
  };
}

/** Marks a keyed answer as for its client only (`private`, varying by Authorization). */
export function keepPrivate(response: Response): void {
  const cache = response.headers.get('cache-control');
  if (cache !== null && cache !== 'no-store')
    response.headers.set('cache-control', cache.replace(/^public\b/, 'private'));
  response.headers.append('vary', 'Authorization');
}

/** The problem response for anything thrown while answering; an unexpected failure's answer and log
 * line carry the request's id, when the adapter gave one, so a report can be matched to the log. */
export function failure(request: Request, err: unknown, requestId?: string, log: HandlerLog = consoleLog): Response {
  if (err instanceof RequestProblem) {
    return problem(request, {
      status: err.status,
      detail: err.message,
      extra: err.parameter ? { parameter: err.parameter } : undefined,
    });
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
  // The logger redacts keys from the line (a stack may quote a request's target).
  log.error(
    { event: 'unexpected_error', ...(requestId ? { request_id: requestId } : {}), ...errorFields(err) },
    `unexpected error${requestId ? ` (request ${requestId})` : ''}`,
  );
  return problem(request, {
    status: 500,
    detail: 'an unexpected error occurred; it has been logged',
    ...(requestId ? { extra: { request_id: requestId }, headers: { [REQUEST_ID_HEADER]: requestId } } : {}),
  });
}
