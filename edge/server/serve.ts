// `isoatlas serve`: the edge function over a local tree or mirror on Node's http server: the local
// server behind `npm start` and the server an offline mirror runs.
import { BadInputError, UsageError } from '../../build/common/errors.js';
import { existsSync, readFileSync, statSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { EDGE_INDEX_FORMAT, treePaths } from '../contract/tree.js';
import { parseManifestIndex } from '../contract/manifest.js';
import {
  createHandler,
  keepPrivate,
  releasesOf,
  type Handler,
  type HandlerOptions,
  type RequestContext,
} from '../handler.js';
import { TrustedFronts } from '../adapters/forwarded.js';
import { RELEASE_HEADER } from '../contract/routes.js';
import type { Releases } from '../endpoints/route-request.js';
import { LocalTreeOrigin } from '../origins/local.js';
import { StoreOrigin } from '../origins/store-origin.js';
import { DirectoryBackend } from '../store/directory-backend.js';
import { POINTER_KEY, parsePointer, type ReleasePointer } from '../contract/store-layout.js';
import { createNodeServer, shutdownGracefully } from '../adapters/node-http.js';
import { withCompression } from '../adapters/compress.js';
import { AccessControl } from '../access/control.js';
import type { AccessConfig } from '../access/config.js';
import { importServerSecret } from '../access/key-format.js';
import { MemoryQuotaStore } from '../access/stores/memory.js';
import { FileKeyRegistry } from '../access/stores/key-file.js';
import { readSecret, registryPath } from '../../build/keys/registry.js';
import { processLogger, type Logger } from './logger.js';
import { ServerMetrics } from './metrics.js';
import { withSystemPaths, type SystemAnswers } from './system-paths.js';
import { requestUrl } from '../request-url.js';
import { MIRROR_RECORD, type MirrorRecord } from '../mirror/mirror.js';
import { IntegrityError, type VerificationFailure } from '../origins/verified.js';
import { RefusedRecord } from '../mirror/refused-record.js';
import { VerificationFailures, type Degraded } from './verification-failures.js';
import { errorFields } from '../handler-log.js';
import { FRONT_TARGET_HEADER, FRONT_TYPE_HEADER, frontFile } from './front-file.js';
import {
  FRONT_COUNTED_HEADER,
  FRONT_KEEP_SECONDS,
  FRONT_STATE_HEADER,
  FrontViews,
  frontCounting,
  frontCountingValue,
  keepableTarget,
} from './front-count.js';

export interface ServeOptions {
  dir: string;
  port: number;
  host: string;
  structureBaseUrl?: string;
  /** Arrangement and limits; keys are read from `keysDir` (registry.json, secret). */
  access: AccessConfig;
  keysDir: string;
  /** Answer GET /metrics (Prometheus text format). */
  metrics?: boolean;
  /** Addresses of fronts (the nginx front) whose X-Forwarded-For names the client, and which may ask
   * GET /admission. */
  trustProxy?: string[];
  /** Every line the server writes (default: the process's logger, JSON on standard output). */
  logger?: Logger;
}

/** The local server's access control: counters in process, keys from the registry file (re-read
 * when it changes, so a revocation applies within seconds). */
async function localAccessControl(access: AccessConfig, keysDir: string): Promise<AccessControl> {
  // Created now if missing, so keys issued after the server started are accepted.
  const secretHex = readSecret(keysDir, { create: true })!;
  return new AccessControl({
    config: access,
    store: new MemoryQuotaStore(),
    keys: new FileKeyRegistry(registryPath(keysDir)),
    secret: await importServerSecret(secretHex),
  });
}

export class NotATreeError extends BadInputError {}

/** Whether `dir` holds a tree this version serves: manifest.json and the edge index of the current formats. */
export function treeIsCurrent(dir: string): boolean {
  try {
    parseManifestIndex(readFileSync(join(dir, treePaths.manifest)), treePaths.manifest);
    const edge = JSON.parse(readFileSync(join(dir, treePaths.edgeIndex), 'utf8')) as { format?: number };
    return edge.format === EDGE_INDEX_FORMAT;
  } catch {
    return false;
  }
}

/** What a directory `isoatlas serve --dir` takes holds: a mirror (a store of releases, with the
 * pointer to its current one) or a rendered tree of this version; anything else is refused, saying
 * what to do. */
export type ServedDir = { kind: 'mirror'; pointer: ReleasePointer } | { kind: 'tree' };

export function servedDir(dir: string): ServedDir {
  if (existsSync(join(dir, POINTER_KEY))) {
    try {
      return { kind: 'mirror', pointer: parsePointer(readFileSync(join(dir, POINTER_KEY), 'utf8')) };
    } catch (err) {
      throw new NotATreeError(
        `${join(dir, POINTER_KEY)}: ${(err as Error).message}; sync the mirror again with \`isoatlas mirror\``,
      );
    }
  }
  for (const path of [treePaths.manifest, treePaths.release]) {
    if (!existsSync(join(dir, path))) {
      throw new NotATreeError(
        `${dir} is neither a rendered isoatlas tree (no ${path}) nor a mirror (no ${POINTER_KEY}); build one with \`isoatlas build\` or \`npm start\`, or sync one with \`isoatlas mirror\``,
      );
    }
  }
  if (!treeIsCurrent(dir)) {
    throw new NotATreeError(
      `${dir} was built by an older version of isoatlas (its manifest or edge index is of an older format): rebuild it with \`isoatlas build\` (or \`npm start -- --rebuild\` for the demo)`,
    );
  }
  return { kind: 'tree' };
}

/** How often the served release is read again (a mirror's pointer, a tree's manifest): a sync or a
 * rebuild switches the served release within this time. */
const RELEASE_RECHECK_MS = 2_000;

/** A mirror is served with pinning and its store files (for other mirrors); a tree as one release. */
function originFor(dir: string): Pick<HandlerOptions, 'origin' | 'storeFiles'> & { kind: ServedDir['kind'] } {
  if (servedDir(dir).kind === 'tree') return { kind: 'tree', origin: new LocalTreeOrigin(dir, RELEASE_RECHECK_MS) };
  const files = new DirectoryBackend(dir);
  return { kind: 'mirror', origin: new StoreOrigin(files, RELEASE_RECHECK_MS), storeFiles: files };
}

/** The request header in which the front names, asking for an admission (the dispatch table's
 * system path `admission`), the manifest its config and compressed copies were made from. */
export const FRONT_MANIFEST_HEADER = 'X-Isoatlas-Front-Manifest';

/** What /health says is wrong, by the step that failed: in words, never a path of this machine (the
 * server's log has the cause). */
const UNHEALTHY = {
  pointer: {
    tree: `the tree has no readable ${treePaths.manifest}`,
    mirror: `the mirror's release pointer (${POINTER_KEY}) is missing or unreadable`,
  },
  manifest: "the current release's manifest is missing or unreadable",
  verification: "the current release's manifest does not match the sha256 the mirror's pointer names",
  record: `the mirror's sync record (${MIRROR_RECORD}) is unreadable`,
};

/** What /health says of files that failed verification, and what to do about them. */
function degradedDetail(d: Degraded, kind: ServedDir['kind']): string {
  const files = d.count === 1 ? '1 file failed' : `${d.count} files failed`;
  const todo =
    kind === 'mirror'
      ? 'sync the mirror again (`isoatlas mirror`): it fetches them again'
      : 'build the tree again (`isoatlas build --force`), or put the files back as built';
  return `${files} verification (corrupt, or listed and missing) and ${d.count === 1 ? 'is' : 'are'} answered 502, the first ${d.first}; ${todo}`;
}

/** What was last written to the served directory: the mirror's last sync, or the tree's manifest
 * (a rebuild swaps in a new one). Failures seen before it changed are forgotten. */
function writtenState(dir: string, synced: MirrorRecord | null): string {
  if (synced) return `sync ${synced.synced_at}`;
  const s = statSync(join(dir, treePaths.manifest), { throwIfNoEntry: false });
  return s ? `tree ${s.ino}:${s.mtimeMs}:${s.size}` : 'none';
}

/** `cause` hears of each check: what was said and why, or null when all is well. */
async function health(
  dir: string,
  kind: ServedDir['kind'],
  releases: Releases,
  failures: VerificationFailures,
  cause: (said: string | null, err?: unknown) => void,
): Promise<Response> {
  const headers = { 'Content-Type': 'application/json; charset=utf-8', 'Cache-Control': 'no-store' };
  let said: string = UNHEALTHY.pointer[kind];
  try {
    const release = await releases.get();
    if (!release) throw new Error('no current release');
    said = UNHEALTHY.manifest;
    const name = await release.name().catch((err) => {
      if (err instanceof IntegrityError) said = UNHEALTHY.verification;
      throw err;
    });
    const manifest = await release.origin.manifestSha256();
    said = UNHEALTHY.record;
    const record = join(dir, MIRROR_RECORD);
    const synced = existsSync(record) ? (JSON.parse(readFileSync(record, 'utf8')) as MirrorRecord) : null;
    const mirror = synced && { source: synced.source, synced_at: synced.synced_at };
    const degraded = await failures.check(writtenState(dir, synced));
    if (degraded) {
      const detail = degradedDetail(degraded, kind);
      cause(detail, detail);
      return new Response(
        JSON.stringify({
          status: 'degraded',
          detail,
          release: name,
          manifest_sha256: manifest,
          mirror,
          failures: degraded,
        }),
        { status: 503, headers: { ...headers, 'Retry-After': '5' } },
      );
    }
    cause(null);
    return new Response(JSON.stringify({ status: 'ok', release: name, manifest_sha256: manifest, mirror }), {
      status: 200,
      headers,
    });
  } catch (err) {
    cause(said, err);
    return new Response(JSON.stringify({ status: 'unavailable', detail: said }), {
      status: 503,
      headers: { ...headers, 'Retry-After': '5' },
    });
  }
}

/** The RateLimit fields of an answer (edge/access/control.ts). */
const RATE_LIMIT_FIELDS = ['ratelimit-limit', 'ratelimit-remaining', 'ratelimit-reset', 'ratelimit-policy'];

/** The nginx front's side of the server (edge/server/front-count.ts): whether the front counted a
 * request itself (its header names the count this server would make, and the request came from a
 * front this server trusts), and how long the front may keep an answer to such a request. */
function frontSide(access: AccessConfig, log: Logger) {
  const counting = frontCounting(access);
  const expected = counting && frontCountingValue(counting);
  const views = new FrontViews(RELEASE_RECHECK_MS);
  let warned = false;
  return {
    counted(request: Request, context: RequestContext): boolean {
      const said = request.headers.get(FRONT_COUNTED_HEADER);
      if (said === null || !context.viaFront) return false;
      if (said === expected) return true;
      if (!warned) {
        warned = true;
        const own = expected ? `as "${expected}"` : 'every request itself';
        log.warn(
          { event: 'front_counts_otherwise', front: said, server: expected },
          `the nginx front counts anonymous requests as "${said}", this server counts ${own}: this server counts them again and the front answers no file itself; run nginx-config with this server's --access and --access-config, and reload nginx`,
        );
      }
      return false;
    },
    /** The header that lets the front keep an answer to a request it counted, or forbids it:
     * kept only when it is the same for every client asking under the same view of the release
     * (`same`), the target and coding asked may be written in clear, and the server has caught up
     * with that view. */
    keep(request: Request, target: string, same: boolean): Record<string, string> {
      // nginx writes the target and the Accept-Encoding it keeps an answer under into its cache file.
      const written = [target, request.headers.get('accept-encoding') ?? ''];
      const keep = same && written.every(keepableTarget) && views.settled(request.headers.get(FRONT_STATE_HEADER));
      return { 'X-Accel-Expires': keep ? String(FRONT_KEEP_SECONDS) : '0' };
    },
  };
}
type FrontSide = ReturnType<typeof frontSide>;

/** The answer to a front's `GET /admission`: the request it stands for (its target in
 * FRONT_TARGET_HEADER; same headers, same client) is checked as if it were served here. 204 admits
 * it, naming the file nginx sends (edge/server/front-file.ts) with the headers the server would add
 * to the file's answer (limits, cache policy, release); 403 sends it on to the server, which answers
 * it in full: when the server would not answer it with a file as it is, when access control refuses
 * it, or when the front's config is of another release than the one served now (its compressed
 * copies are that release's). A request the front did not count is counted here when admitted (a
 * refusal leaves the counters untouched, and the server counts the request when it answers it): one
 * admission per request. One the front counted itself (`counted`) is not, and is asked with none of
 * the client's headers but Accept-Encoding (nginx-config.ts): its answer is the same for every
 * anonymous client, and the front keeps it under its view of the release (FrontSide.keep). */
async function admission(
  request: Request,
  context: RequestContext,
  releases: Releases,
  access: AccessControl,
  store: boolean,
  front: FrontSide,
): Promise<Response> {
  const counted = context.countedByFront === true;
  const target = request.headers.get(FRONT_TARGET_HEADER);
  const refer = (same: boolean) =>
    new Response(null, {
      status: 403,
      headers: { 'Cache-Control': 'no-store', ...(counted && target ? front.keep(request, target, same) : {}) },
    });
  const release = await releases.get();
  if (!release) return refer(false);
  if ((await release.origin.manifestSha256()) !== request.headers.get(FRONT_MANIFEST_HEADER)) return refer(true);
  const type = request.headers.get(FRONT_TYPE_HEADER);
  if (target === null || type === null) return refer(false);
  // Asked as counted by a front this server does not believe (another limit): without the client's
  // headers, so not to be admitted here either; the server answers it, and counts it.
  if (!counted && request.headers.has(FRONT_COUNTED_HEADER)) return refer(false);
  // What the handler would fail to read, it answers itself (a 502 for a file the manifest lists and
  // the disk lacks), as the request is passed on.
  const file = await frontFile(target, request.headers, type, release, releases, store).then(
    (named) => ({ named }),
    () => null,
  );
  if (file === null) return refer(false);
  if (file.named === null) return refer(true);
  const decision = counted ? null : await access.decide(request, context.clientIp, { countRefused: false });
  if (decision?.denied) return refer(false);
  const answer = new Response(null, {
    status: 204,
    headers: {
      ...decision?.headers,
      ...file.named.headers,
      'Cache-Control': file.named.cacheControl,
      [RELEASE_HEADER]: await release.name(),
      ...(counted ? front.keep(request, target, true) : {}),
    },
  });
  if (access.mode === 'key-required') keepPrivate(answer);
  return answer;
}

/** An address as it is written before a port (an IPv6 address in brackets). */
const urlHost = (host: string) => (host.includes(':') ? `[${host}]` : host);

/** Why the server could not listen, as a command-line problem when it is one (a port in use, an
 * address not of this machine, a port the user may not open), naming the address and what to do. */
function listenError(err: NodeJS.ErrnoException, host: string, port: number): Error {
  const at = `${urlHost(host)}:${port}`;
  if (err.code === 'EADDRINUSE')
    return new UsageError(`${at} is already in use: choose another --port, or stop what listens there`);
  if (err.code === 'EACCES')
    return new UsageError(
      `not permitted to listen on ${at}: choose a --port from 1024 up, or run with the right to bind low ports`,
    );
  if (err.code === 'EADDRNOTAVAIL')
    return new UsageError(
      `${host} is not an address of this machine: choose another --host (127.0.0.1 for this machine only, 0.0.0.0 for all)`,
    );
  return err;
}

/** Serves until SIGTERM/SIGINT; resolves once in-flight requests have finished and the server closed. */
export async function serve(opts: ServeOptions): Promise<void> {
  const dir = resolve(opts.dir);
  const { kind, ...served } = originFor(dir);
  const log = opts.logger ?? processLogger();
  const access = await localAccessControl(opts.access, opts.keysDir);
  const front = frontSide(opts.access, log);
  // A local server has memory to spare: keep many more verified bodies than an edge instance.
  // Files refused for failing verification: /health is degraded while any is known.
  const failures = new VerificationFailures();
  // A mirror notes the objects it refused, for its next sync to fetch again.
  const refused =
    kind === 'mirror' ? new RefusedRecord(dir, (line) => log.warn({ event: 'refused_record' }, line)) : null;
  const options = {
    ...served,
    structureBaseUrl: opts.structureBaseUrl,
    serveStructureFiles: true,
    access,
    bodyCacheBytes: 256 * 1024 * 1024,
    onVerificationFailure: (failure: VerificationFailure) => {
      failures.record(failure);
      if (refused && failure.sha256) refused.note(failure.sha256);
    },
    log,
  };
  const releases = releasesOf(options);
  // Compressed copies are a fraction of their bodies: a quarter of the verified-body budget holds them.
  const api = withCompression(createHandler(options, releases), options.bodyCacheBytes / 4);
  const metrics = opts.metrics ? new ServerMetrics() : null;
  // The cause behind /health's 503, for the operator: logged when it changes, not at every probe.
  let unhealthy: string | null = null;
  const healthCause = (said: string | null, err?: unknown) => {
    const cause = said && String((err as Error)?.message ?? err);
    if (cause && cause !== unhealthy) log.warn({ event: 'unhealthy', detail: said, cause }, `unhealthy: ${said}`);
    else if (!cause && unhealthy) log.info({ event: 'healthy' }, 'healthy again');
    unhealthy = cause;
  };
  // The server's own paths of the dispatch table, each answered as its access class says; every other
  // request is the handler's.
  const answers: SystemAnswers = {
    health: () => health(dir, kind, releases, failures, healthCause),
    // Asked only with --metrics (its access class), when `metrics` exists.
    metrics: async () =>
      new Response(metrics!.render(), {
        headers: { 'Content-Type': 'text/plain; version=0.0.4; charset=utf-8', 'Cache-Control': 'no-store' },
      }),
    admission: (request, context) => admission(request, context, releases, access, kind === 'mirror', front),
  };
  const answered = withSystemPaths(api, answers, { metrics: metrics !== null });
  // A request the front counted itself is not counted here; a 404 to one, the same for every
  // anonymous client (a name absent from a release stays absent), the front may keep.
  const handler: Handler = async (request, context = {}) => {
    context.countedByFront = front.counted(request, context);
    const response = await answered(request, context);
    if (context.countedByFront && context.answeredBy !== 'admission' && response.status === 404) {
      const url = requestUrl(request);
      const keep = front.keep(request, url.pathname + url.search, true);
      for (const [name, value] of Object.entries(keep)) response.headers.set(name, value);
      // Kept, it is given again in other minutes: the front adds the minute's RateLimit fields.
      if (keep['X-Accel-Expires'] !== '0') for (const name of RATE_LIMIT_FIELDS) response.headers.delete(name);
    }
    return response;
  };
  // One line per request, at info level. The line holds no header (RequestLogEntry), so the logger's
  // redaction by path (credential headers) has nothing to find there and is left out: half of the
  // line's cost. Its target is redacted where it is taken (node-http.ts printable), and the whole
  // line of what is shaped like a key, as every line (logger.ts).
  const accessLog = log.child({}, { redact: { paths: [], censor: '' } });
  const server = createNodeServer(handler, {
    trustedFronts: new TrustedFronts(opts.trustProxy ?? []),
    ipv6Prefix: opts.access.ipv6_prefix,
    log,
    logRequest: (entry) => {
      // A front's admissions are not logged: the front logs the request they stood for.
      if (entry.route === 'admission' && (entry.status === 204 || entry.status === 403)) return;
      accessLog.info(entry);
      metrics?.observe(entry.route, entry.status, entry.ms / 1000);
    },
  });
  // Each request has its boundary (createNodeServer); a promise rejected outside any request (none is
  // known) is logged rather than allowed to stop a server that can go on answering. An uncaught
  // exception still stops it (for the service manager to restart), logged as the last line.
  const stray = (reason: unknown) =>
    log.error(
      { event: 'unhandled_rejection', detail: String((reason as Error)?.stack ?? reason) },
      'a promise was rejected outside any request',
    );
  const fatal = (err: Error) => {
    log.fatal({ event: 'uncaught_exception', ...errorFields(err) }, 'uncaught exception: stopping');
    process.exit(1);
  };
  // Node's own warnings (deprecations, listeners) as log lines too, not text on stderr.
  const warnings = process.listeners('warning');
  const warning = (w: Error) =>
    log.warn({ event: 'node_warning', type: w.name, detail: w.message }, `${w.name}: ${w.message}`);
  process.on('unhandledRejection', stray);
  process.on('uncaughtException', fatal);
  process.removeAllListeners('warning').on('warning', warning);
  const unhook = () => {
    process.off('unhandledRejection', stray);
    process.off('uncaughtException', fatal);
    process.off('warning', warning);
    for (const l of warnings) process.on('warning', l);
  };
  // Say which release is served, and when a sync or rebuild switches it.
  let servedRelease: string | null = null;
  const watch = async () => {
    const name = await releases
      .get()
      .then((r) => r?.name() ?? null)
      .catch(() => null);
    if (name !== servedRelease)
      log.info(
        { event: 'release', release: name, previous: servedRelease },
        name ? `serving release ${name}` : 'no release to serve',
      );
    servedRelease = name;
  };
  await watch();
  const watcher = setInterval(() => void watch(), RELEASE_RECHECK_MS);
  watcher.unref();
  await new Promise<void>((ok, fail) => {
    server.once('error', (err) => fail(listenError(err, opts.host, opts.port)));
    server.listen(opts.port, opts.host, () => ok());
  }).catch((err) => {
    clearInterval(watcher);
    unhook();
    throw err;
  });
  const { port } = server.address() as AddressInfo;
  const url = `http://${urlHost(opts.host)}:${port}/api/v1/`;
  log.info(
    { event: 'listening', url, dir, access: opts.access.mode },
    `isoatlas serving ${dir} at ${url} (access: ${opts.access.mode}; Ctrl-C to stop)`,
  );

  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      log.info({ event: 'stopping', signal }, `${signal}: finishing in-flight requests, then stopping`);
      shutdownGracefully(server).then(done);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  clearInterval(watcher);
  unhook();
  log.info({ event: 'stopped' }, 'stopped');
}
