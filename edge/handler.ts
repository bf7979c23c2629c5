// The edge function: a pure (Request) => Response over an origin holding the rendered tree. It
// resolves names through the alias maps, serves file-backed routes from the tree's files (slicing
// pages when a limit/offset asks for it), answers search and the structure redirect, and turns every
// bad input into a problem+json 4xx. No framework; Web-standard types only. Inside, answers are
// EdgeResponses (the bytes at hand): the handler gives out Web Responses, and the Node adapter takes
// the EdgeResponse itself (directHandlerOf) so a local request builds no Web Request or Response.
import { cacheControl, type Route } from './contract/routes.js';
import { ISOFORM_PAGE_SIZE, NEOANTIGEN_TOP, links, treePaths } from './contract/tree.js';
import type { IsoformPageBody, NeoantigenListBody } from './contract/schemas.js';
import { OriginError, isVersioned, type Origin, type OriginObject, type PinnedRelease, type VersionedOrigin } from './origin.js';
import { ReleaseData } from './release-data.js';
import { VerifiedOrigin } from './origins/verified.js';
import { matchRoute, parseQuery, RequestProblem, type QueryValues } from './router.js';
import { ALLOW, CORS_HEADERS, EdgeResponse, NO_FIELDS, PREFLIGHT_HEADERS, fileJsonResponse, jsonBody, jsonResponse, problem, sha256Hex, toWebResponse, type BodyOptions } from './responses.js';
import type { EdgeRequest, RequestTarget } from './request.js';
import { search } from './search.js';
import { LoadingCache } from './loading-cache.js';
import type { AccessControl, EdgeDecision } from './access/control.js';
import { redactKeys } from './access/key-format.js';

export interface HandlerOptions {
  /** The tree: one release (a directory, a base URL) or a published bucket with a release pointer. */
  origin: Origin | VersionedOrigin;
  /** Base URL the structure redirect points into (`<base>/structures/<id>.cif`). Default: the
   * request's own origin, for a server that also serves the files (serveStructureFiles). */
  structureBaseUrl?: string;
  /** Serve `/structures/<id>.cif` from the tree (local server and mirrors; the CDN serves them from S3). */
  serveStructureFiles?: boolean;
  /** API keys and rate limits; without it every request is served. */
  access?: AccessControl;
  /** Memory for verified file bodies, per release (default 16 MiB; a local server affords more). */
  bodyCacheBytes?: number;
  /** Memory for answers made for a request target (a sliced page, a shortened list), per release
   * (default 4 MiB). */
  madeAnswerBytes?: number;
}

/** Facts about the request that only the adapter knows and the client cannot forge. */
export interface RequestContext {
  clientIp?: string;
}

export type Handler = (request: EdgeRequest, context?: RequestContext) => Promise<Response>;
/** The same handler, answering with the EdgeResponse it built (no Web Response): at once when it
 * can (see respond in createHandler), else with a promise. */
export type DirectHandler = (request: EdgeRequest, context?: RequestContext) => EdgeResponse | Promise<EdgeResponse>;

const direct = new WeakMap<Handler, DirectHandler>();

/** The direct form of a handler made by createHandler; undefined for any other handler. */
export function directHandlerOf(handler: Handler): DirectHandler | undefined {
  return direct.get(handler);
}

const decoder = new TextDecoder();
const MMCIF_TYPE = 'chemical/x-mmcif';
const PREFLIGHT = EdgeResponse.of(204, { ...PREFLIGHT_HEADERS, Allow: ALLOW }, null).fields;
const NO_LIMITS: EdgeDecision = { denied: null, fields: NO_FIELDS };
/** Request targets a release remembers answering with a file (see releaseServer): about 100 bytes
 * each, so at most a few MB of an edge instance's memory. */
const MAX_FILE_TARGETS = 20_000;

/** One release's answers. */
interface ReleaseServer {
  serve(request: EdgeRequest): Promise<EdgeResponse>;
  /** The answer to a GET or HEAD whose target was answered with a file before, when that file is
   * still in memory: at once, without waiting for anything. Undefined otherwise (serve it then). */
  answerNow(request: EdgeRequest): EdgeResponse | undefined;
}

export function createHandler(options: HandlerOptions): Handler {
  const source = options.origin;
  const single = isVersioned(source) ? null : releaseServer(source, (path) => path, options);
  const byRelease = new Map<string, ReleaseServer>();

  /** The server of a pinned release. Each request is answered from one pinned release; the caches
   * of the previous release are kept until the one after, so requests in flight finish on theirs. */
  function serverOf(pinned: PinnedRelease): ReleaseServer {
    let server = byRelease.get(pinned.release);
    if (!server) {
      server = releaseServer(pinned.origin, pinned.publicPath, options);
      byRelease.set(pinned.release, server);
      if (byRelease.size > 2) byRelease.delete(byRelease.keys().next().value!);
    }
    return server;
  }

  async function currentRelease(): Promise<ReleaseServer> {
    return single ?? serverOf(await (source as VersionedOrigin).pin());
  }

  /** The current release's server, when that is known without waiting. */
  function currentReleaseNow(): ReleaseServer | undefined {
    if (single) return single;
    const pinned = (source as VersionedOrigin).pinnedNow?.();
    return pinned && serverOf(pinned);
  }

  /** Most requests of a busy server ask again for what was asked before. Those are answered at once,
   * with no promise to wait for: the request is counted in memory (decideNow), the release is the one
   * pinned lately, and the target's file is in memory (answerNow). Anything else waits in
   * respondLater, having been counted once at most. The answers are the same either way. */
  function respond(request: EdgeRequest, context: RequestContext = {}): EdgeResponse | Promise<EdgeResponse> {
    if (request.method !== 'GET' && request.method !== 'HEAD') return respondLater(request, context);
    try {
      const decision = options.access ? options.access.decideNow(request, context.clientIp) : NO_LIMITS;
      if (decision === undefined) return respondLater(request, context);
      if (decision.denied) return decision.denied;
      const answer = currentReleaseNow()?.answerNow(request);
      return answer ? withLimits(answer, decision) : respondLater(request, context, decision);
    } catch (err) {
      return failure(request, err);
    }
  }

  async function respondLater(request: EdgeRequest, context: RequestContext, decided?: EdgeDecision): Promise<EdgeResponse> {
    try {
      // Preflights carry no credentials (browsers never send Authorization with them): not counted.
      if (request.method === 'OPTIONS') return EdgeResponse.sharing(204, PREFLIGHT, null);
      if (request.method !== 'GET' && request.method !== 'HEAD') {
        return problem(request, { status: 405, detail: `method ${request.method} is not allowed; this API is read-only`, headers: { Allow: ALLOW } });
      }
      const decision = decided ?? (options.access ? await options.access.decide(request, context.clientIp) : NO_LIMITS);
      if (decision.denied) return decision.denied;
      return withLimits(await (await currentRelease()).serve(request), decision);
    } catch (err) {
      return failure(request, err);
    }
  }

  const handle: Handler = async (request, context) => toWebResponse(await respond(request, context));
  direct.set(handle, respond);
  return handle;
}

/** The response with the RateLimit headers of its request. */
function withLimits(response: EdgeResponse, decision: EdgeDecision): EdgeResponse {
  const { fields } = decision;
  for (let i = 0; i < fields.length; i += 2) response.set(fields[i], fields[i + 1]);
  return response;
}

/** Answers requests from one release of the tree, with that release's alias maps and index. */
function releaseServer(raw: Origin, publicPath: (treePath: string) => string, options: HandlerOptions): ReleaseServer {
  // Every file, edge data included, is checked against the manifest before it is used.
  const origin = new VerifiedOrigin(raw, { bodyCacheBytes: options.bodyCacheBytes });
  const data = new ReleaseData(origin);
  /** Request targets (path and query) answered with a file as it is, and with which: within a release
   * such a target always gets that file (its names resolve to the same ids), so the next request for
   * it needs neither routing nor resolving (answerNow). The oldest is forgotten first. */
  const fileTargets = new Map<string, FileTarget>();
  /** Answers made for a target from files (a window sliced from the pre-split pages, a neoantigen
   * list cut short): the same on every request for it within a release, so they are kept, by their
   * bytes, and the next request for the target is answered at once too. */
  const madeAnswers = new LoadingCache<MadeAnswer>(options.madeAnswerBytes ?? 4 * 1024 * 1024);

  function remember(url: RequestTarget, target: FileTarget): void {
    const key = targetKey(url);
    if (fileTargets.size >= MAX_FILE_TARGETS && !fileTargets.has(key)) fileTargets.delete(fileTargets.keys().next().value!);
    fileTargets.set(key, target);
  }

  function answerNow(request: EdgeRequest): EdgeResponse | undefined {
    const key = targetKey(request.target ?? new URL(request.url));
    const known = fileTargets.get(key);
    if (known) {
      const file = origin.readNow(known.path);
      return file && file.sha256 !== undefined ? keptResponse(request, file.body, file.sha256, known) : undefined;
    }
    const made = madeAnswers.peek(key);
    return made && keptResponse(request, made.body, made.sha256, made);
  }

  /** The answer to `url` made by `make` (once per target while it is kept). */
  async function madeAnswer(request: EdgeRequest, url: RequestTarget, make: () => Promise<MadeBody>): Promise<EdgeResponse> {
    const made = await madeAnswers.get(targetKey(url), async () => {
      const answer = await make();
      return { value: { ...answer, sha256: await sha256Hex(answer.body) }, weight: answer.body.length + 256 };
    });
    return keptResponse(request, made.body, made.sha256, made);
  }

  /** The answer to `url` with a file as it is, remembered for answerNow. */
  function targetFile(url: RequestTarget, path: string, file: OriginObject, opts: BodyOptions): EdgeResponse | Promise<EdgeResponse> {
    remember(url, { path, cacheControl: opts.cacheControl, headers: opts.headers });
    return fileJson(file, opts);
  }

  /** A file of the tree that the alias maps say must exist: its absence is the origin's fault. */
  async function mustRead(path: string): Promise<OriginObject> {
    const file = await origin.read(path);
    if (!file) throw new OriginError(`${path} is missing from the tree at ${origin.description}`, 'unavailable');
    return file;
  }

  /** A file served as it is: the manifest's sha256 is its ETag. */
  async function fileResponse(path: string, opts: BodyOptions): Promise<EdgeResponse> {
    return fileJson(await mustRead(path), opts);
  }

  /** A file's bytes as they are (the verified origin knows every file's sha256: no hashing, no wait). */
  function fileJson(file: OriginObject, opts: BodyOptions): EdgeResponse | Promise<EdgeResponse> {
    return file.sha256 === undefined ? jsonResponse(file.body, opts) : fileJsonResponse(file.body, file.sha256, opts);
  }

  async function geneId(request: EdgeRequest, key: string): Promise<string | EdgeResponse> {
    const resolved = await data.gene(key);
    if (resolved === null) return problem(request, { status: 404, detail: `no gene with symbol or id "${key}" in this release` });
    if (Array.isArray(resolved)) {
      return problem(request, {
        status: 300,
        detail: `symbol "${key}" names ${resolved.length} genes; ask for one of them by gene id`,
        extra: { choices: resolved.map((id) => ({ gene_id: id, link: links.gene(id) })) },
      });
    }
    return resolved;
  }

  async function transcriptId(request: EdgeRequest, key: string): Promise<string | EdgeResponse> {
    const resolved = await data.isoform(key);
    return resolved ?? problem(request, { status: 404, detail: `no isoform with transcript id or name "${key}" in this release` });
  }

  async function geneIsoforms(request: EdgeRequest, url: RequestTarget, id: string, query: QueryValues): Promise<EdgeResponse> {
    const { limit, offset } = query.integers;
    const cache = { request, cacheControl: cacheControl.release };
    const firstPage = Math.floor(offset / ISOFORM_PAGE_SIZE);
    if (limit === ISOFORM_PAGE_SIZE && offset % ISOFORM_PAGE_SIZE === 0) {
      const path = treePaths.genePage(id, firstPage);
      const file = await origin.read(path);
      if (file) {
        // Parsed once per target for its Link header: the next request for it is answered at once.
        const { next } = JSON.parse(decoder.decode(file.body)) as IsoformPageBody;
        return targetFile(url, path, file, { ...cache, headers: next ? { Link: `<${next}>; rel="next"` } : {} });
      }
    }
    // Any other window is sliced from the pre-split pages it overlaps.
    return madeAnswer(request, url, () => slicedPage(id, limit, offset));
  }

  /** The window [offset, offset + limit) of a gene's isoforms, from the pre-split pages it overlaps. */
  async function slicedPage(id: string, limit: number, offset: number): Promise<MadeBody> {
    const firstPage = Math.floor(offset / ISOFORM_PAGE_SIZE);
    const first = JSON.parse(decoder.decode((await mustRead(treePaths.genePage(id, 0))).body)) as IsoformPageBody;
    const items = [];
    const lastPage = Math.min(Math.floor((offset + limit - 1) / ISOFORM_PAGE_SIZE), Math.max(0, Math.ceil(first.total / ISOFORM_PAGE_SIZE) - 1));
    for (let n = firstPage; n <= lastPage; n++) {
      const page = n === 0 ? first : (JSON.parse(decoder.decode((await mustRead(treePaths.genePage(id, n))).body)) as IsoformPageBody);
      items.push(...page.items);
    }
    const start = offset - firstPage * ISOFORM_PAGE_SIZE;
    const next = offset + limit < first.total ? links.geneIsoforms(id, limit, offset + limit) : null;
    const body: IsoformPageBody = {
      gene_id: first.gene_id,
      symbol: first.symbol,
      total: first.total,
      limit,
      offset,
      next,
      items: offset >= first.total ? [] : items.slice(start, start + limit),
    };
    return { body: jsonBody(body), cacheControl: cacheControl.release, headers: next ? { Link: `<${next}>; rel="next"` } : undefined };
  }

  async function neoantigens(request: EdgeRequest, url: RequestTarget, id: string, limit: number): Promise<EdgeResponse> {
    const path = treePaths.neoantigens(id);
    const file = await mustRead(path);
    // The file holds the top NEOANTIGEN_TOP: a limit as large is the file itself, unparsed.
    if (limit >= NEOANTIGEN_TOP) return targetFile(url, path, file, { request, cacheControl: cacheControl.release });
    return madeAnswer(request, url, async () => {
      const list = JSON.parse(decoder.decode(file.body)) as NeoantigenListBody;
      const body: NeoantigenListBody = { ...list, limit, items: list.items.slice(0, limit) };
      return { body: jsonBody(body), cacheControl: cacheControl.release };
    });
  }

  async function structureRedirect(request: EdgeRequest, id: string): Promise<EdgeResponse> {
    const entry = await data.structure(id);
    if (!entry) return problem(request, { status: 404, detail: `isoform ${id} has no predicted structure in this release` });
    const base = options.structureBaseUrl ?? new URL(request.url).origin;
    const location = `${base.replace(/\/$/, '')}/${publicPath(entry.path)}`;
    return EdgeResponse.of(307, { ...CORS_HEADERS, Location: location, 'Cache-Control': cacheControl.redirect }, null);
  }

  async function structureFile(request: EdgeRequest, name: string): Promise<EdgeResponse> {
    const id = name.endsWith('.cif') ? name.slice(0, -4) : null;
    const entry = id === null ? null : await data.structure(id);
    if (!entry || entry.path !== treePaths.structureFile(id!)) return problem(request, { status: 404, detail: `no structure file ${name}` });
    const response = await fileResponse(entry.path, { request, cacheControl: cacheControl.release });
    if (response.status === 200) response.set('content-type', MMCIF_TYPE);
    return response;
  }

  async function route(request: EdgeRequest, url: RequestTarget, matched: { route: Route; params: Record<string, string> }): Promise<EdgeResponse> {
    const query = parseQuery(matched.route, new URLSearchParams(url.search));
    const cache = { request, cacheControl: cacheControl[matched.route.cache] };
    /** The target's answer: this file as it is. */
    const file = async (path: string) => targetFile(url, path, await mustRead(path), cache);
    switch (matched.route.id) {
      case 'root':
      case 'release':
        return file(treePaths.release);
      case 'openapi':
        return file(treePaths.openapi);
      case 'gene':
      case 'geneIsoforms': {
        const id = await geneId(request, matched.params.symbol);
        if (typeof id !== 'string') return id;
        return matched.route.id === 'gene' ? file(treePaths.gene(id)) : geneIsoforms(request, url, id, query);
      }
      case 'isoform':
      case 'domains':
      case 'neoantigens':
      case 'structure': {
        const id = await transcriptId(request, matched.params.transcript_id);
        if (typeof id !== 'string') return id;
        if (matched.route.id === 'isoform') return file(treePaths.isoform(id));
        if (matched.route.id === 'domains') return file(treePaths.domains(id));
        if (matched.route.id === 'neoantigens') return neoantigens(request, url, id, query.integers.limit);
        return structureRedirect(request, id);
      }
      case 'search': {
        const text = query.strings.query;
        if (text.trim() === '') throw new RequestProblem(400, '"query" must contain something other than white space', 'query');
        const limit = query.integers.limit;
        const result = await search(data, text, limit);
        return jsonResponse(jsonBody({ query: text, limit, total: result.total, items: result.items }), cache);
      }
      default:
        return problem(request, { status: 404, detail: `no route for ${url.pathname}` });
    }
  }

  async function serveRequest(request: EdgeRequest): Promise<EdgeResponse> {
    try {
      const url = request.target ?? new URL(request.url);
      if (options.serveStructureFiles && url.pathname.startsWith('/structures/')) {
        const name = url.pathname.slice('/structures/'.length);
        if (name.includes('/') || url.search) return problem(request, { status: 404, detail: `no structure file ${url.pathname}` });
        return await structureFile(request, name);
      }
      const matched = matchRoute(url.pathname);
      if (!matched) {
        return problem(request, { status: 404, detail: `no endpoint at ${url.pathname.slice(0, 200)}; the API lives under /api/v1/ (see /api/v1/openapi.json)` });
      }
      return await route(request, url, matched);
    } catch (err) {
      return failure(request, err);
    }
  }

  return { serve: serveRequest, answerNow };
}

/** How a request target is answered with a file as it is. */
interface FileTarget {
  path: string;
  cacheControl: string;
  headers?: Record<string, string>;
}

/** An answer made for a target rather than read from one file: its bytes and their sha256 (the ETag). */
interface MadeAnswer {
  body: Uint8Array;
  sha256: string;
  cacheControl: string;
  headers?: Record<string, string>;
}

type MadeBody = Omit<MadeAnswer, 'sha256'>;

/** The answer with bytes whose sha256 is known (a file's, or a kept made answer's), as `how` says. */
function keptResponse(request: EdgeRequest, body: Uint8Array, sha256: string, how: { cacheControl: string; headers?: Record<string, string> }): EdgeResponse {
  return fileJsonResponse(body, sha256, { request, cacheControl: how.cacheControl, headers: how.headers });
}

/** The key a request target is remembered by: its path and query. */
function targetKey(url: RequestTarget): string {
  return url.search === '' ? url.pathname : url.pathname + url.search;
}

/** The problem response for anything thrown while answering. */
function failure(request: EdgeRequest, err: unknown): EdgeResponse {
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
  console.error(`isoatlas edge: unexpected error: ${redactKeys(String((err as Error).stack ?? err))}`);
  return problem(request, { status: 500, detail: 'an unexpected error occurred; it has been logged' });
}
