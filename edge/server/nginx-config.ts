// `isoatlas nginx-config`: an nginx front for `isoatlas serve`, generated from the tree or mirror it
// fronts. nginx answers requests for a resource from the file itself (sendfile, many connections, TLS
// where the operator adds it) once they are counted and admitted (GET /admission,
// edge/server/serve.ts); everything else (search, keys, redirects, conditional requests, refusals) is
// passed to the server. In arrangement A nginx counts anonymous requests itself and keeps the
// server's admissions and 404s for them (edge/server/front-count.ts says why and how), so that a file
// is answered without the server; keyed requests, and every request in B, are counted by the server,
// one admission each. The admission also names the file nginx sends, the server's own choice for that
// request (edge/server/front-file.ts): the config holds no list of files, so neither it nor nginx's
// memory grows with the release, and the manifest is read here one shard at a time, for the compressed
// copies (edge/server/nginx-compressed.ts). The answers nginx gives are the server's, header for
// header: the ETag, coding and Link come from the admission's answer, the rest from the contract's
// constants and the admission's limits, cache policy and release.
import { createHash } from 'node:crypto';
import { rename, writeFile } from 'node:fs/promises';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { userInfo } from 'node:os';
import { basename, dirname, join, resolve } from 'node:path';
import {
  API_PREFIX,
  contentTypeOf,
  routesOfTreeFile,
  treePaths,
  withId,
  type ManifestEntry,
  type ManifestIndex,
} from '../contract/tree.js';
import { LocalOrigin } from '../origins/local.js';
import { StoreReleaseFiles } from '../origins/store-origin.js';
import { RELEASE_HEADER, isKeyedFile, listSize, routes, type Route } from '../contract/routes.js';
import { CORS_HEADERS } from '../contract/http-headers.js';
import { ALLOW, PROBLEM_TYPE, problemBody } from '../responses.js';
import { NGINX_REFUSED_REQUEST, REFUSED_TARGET_DETAIL } from '../contract/targets.js';
import { connectionShareProblem, serverLimits, type ServerLimits } from '../adapters/server-limits.js';
import { SAFE_TARGET, keyPrefixPattern, routeShapes } from './nginx-redaction.js';
import { forEachManifestShard } from '../../build/common/manifest-reader.js';
import { FRONT_MANIFEST_HEADER, servedDir } from './serve.js';
import { fileKinds, structureFilePath, systemPaths, type FileKindId } from '../contract/dispatch.js';
import { POINTER_KEY, releasePublicPath } from '../contract/store-layout.js';
import { BadInputError, UsageError } from '../../build/common/errors.js';
import { CopiesWriter, type CompressedCopies } from './nginx-compressed.js';
import { FRONT_FILE_HEADERS, FRONT_TARGET_HEADER, FRONT_TYPE_HEADER } from './front-file.js';
import { FRONT_COUNTED_HEADER, FRONT_STATE_HEADER, frontCounting, frontCountingValue } from './front-count.js';
import { resolveAccessConfig, type AccessConfig } from '../access/config.js';
import { frontCountedFields } from '../access/control.js';
import { clientKeyMap } from './nginx-client.js';
import { HEADER_LIMITS } from '../contract/header-limits.js';

export interface NginxConfigOptions {
  /** The rendered tree or mirror `isoatlas serve --dir` serves. */
  dir: string;
  /** Where that server listens, as nginx names an upstream server (`127.0.0.1:8080`). */
  upstream: string;
  /** nginx's `listen` (`80`, `127.0.0.1:8081`, …). */
  listen: string;
  serverName: string;
  /** The file the front writes its own answers' log lines to. */
  accessLog: string;
  /** Where the compressed copies of the files go (default: beside `dir`, named `<dir>.compressed`). */
  compressedDir?: string;
  version: string;
  /** The server's limits the front keeps as well (default: as `isoatlas serve` reads them, from
   * SERVER_LIMITS and the environment's ISOATLAS_* overrides), so that front and server agree. */
  limits?: ServerLimits;
  /** The server's arrangement and limits (`isoatlas serve --access --access-config`; default: open,
   * the default limits): in A the front counts anonymous requests itself (front-count.ts). */
  access?: AccessConfig;
  /** Where nginx keeps the admissions and 404s it may answer again without the server (default
   * DEFAULT_CACHE_DIR). */
  cacheDir?: string;
}

export interface NginxConfig {
  text: string;
  release: string;
  manifestSha256: string;
  /** Files of the release nginx may answer a request with (those the server names at admission). */
  files: number;
  compressed: CompressedCopies & { dir: string };
}

/** Where nginx keeps what it may answer again, by default: in Debian's nginx's own directory, which
 * nginx creates it in. */
export const DEFAULT_CACHE_DIR = '/var/lib/nginx/isoatlas-cache';

/** The first line of every generated config: how a later run knows the file is its own to replace. */
export const GENERATED_MARK = '# isoatlas nginx front';

/** The kinds of file nginx serves, by the content type the manifest gives them. */
const KINDS = { json: contentTypeOf('x.json'), mmcif: contentTypeOf('x.cif') } as const;
type Kind = keyof typeof KINDS;

/** The file kinds of the dispatch table the front answers from files (front rule `files`), each with
 * the request a file of the tree is asked by, in the release served (`release`: null for a tree, which
 * is served as the current release): a kind given that rule without an entry here does not compile. */
type FrontFileKind = { [K in FileKindId]: (typeof fileKinds)[K]['front'] extends 'files' ? K : never }[FileKindId];
const fileKindRequests: {
  readonly [K in FrontFileKind]: (treePath: string, release: string | null) => { uri: string; kind: Kind } | null;
} = {
  structure_file(treePath, release) {
    const file = fileKinds.structure_file.match(`/${treePath}`);
    return file !== null && file.release === null && /^[^/]+\.cif$/.test(file.name)
      ? { uri: structureFilePath(treePath, release), kind: 'mmcif' }
      : null;
  },
};

/** The request (decoded path, no query) a file of the tree answers on its own, by its canonical id:
 * from the dispatch table's file kinds the front answers from files, and from the route table every
 * route declared as a file (edge/contract/tree.ts routesOfTreeFile is
 * the inverse of its paths). A list answers a request without a query as the file only when its
 * default limit is the file's whole list; a page list by its first page (with the Link header the
 * server adds when there is a next one). test/front-file.test.ts checks, for every such request,
 * that the admission names the very file the server answers it with. */
export function requestsOfTreeFile(path: string, release: string | null): { uri: string; kind: Kind }[] {
  const files = Object.values(fileKindRequests).flatMap((request) => request(path, release) ?? []);
  return [
    ...files,
    ...routesOfTreeFile(path).flatMap(({ route, id, page }) => {
      const uri = `${API_PREFIX}${id === undefined ? route.path : withId(route, id)}`;
      if (!isKeyedFile(route) || route.file.window === undefined) return [{ uri, kind: 'json' as const }];
      if (limitDefault(route) !== listSize(route) || (page ?? 0) !== 0) return [];
      return [{ uri, kind: 'json' as const }];
    }),
  ];
}

const limitDefault = (route: Route) => route.integerParams.find((p) => p.name === 'limit')?.default;

/** A path template as a regular expression: `marker` stands for one path segment's characters. */
const pathPattern = (path: string, marker: string) =>
  `^${path
    .replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    .split(marker)
    .join('[^/]+')}$`;

/** The shapes of the paths the front may answer from a file, by the kind of file (nginx's decoded,
 * normalized `$uri`): every route declared as a file, with any id (a name resolves to the same file)
 * and the trailing slash the router forgives, and the structure files of the current release and of
 * a pinned one. The server decides, at admission, whether a file answers the request as it is. */
export const FRONT_SHAPES: readonly { kind: Kind; pattern: string }[] = (() => {
  const marker = '\u0000';
  const structure = treePaths.structureFile(marker);
  return [
    ...routes.flatMap((route) => {
      if (!('file' in route)) return [];
      const path = `${API_PREFIX}${route.path.replace(/\{[^}]+\}/g, marker)}`.replace(/\/$/, '');
      return [{ kind: 'json' as const, pattern: pathPattern(path, marker).replace(/\$$/, '/?$') }];
    }),
    { kind: 'mmcif' as const, pattern: pathPattern(`/${structure}`, marker) },
    { kind: 'mmcif' as const, pattern: pathPattern(`/${releasePublicPath(marker, structure)}`, marker) },
  ];
})();

/** The release `isoatlas serve --dir` would serve from `dir` (the same directories are refused), read
 * as the edge reads it: a mirror's files by the sha256 its manifest lists. */
function openSource(dir: string) {
  const served = servedDir(dir);
  const raw = new LocalOrigin(dir);
  const files =
    served.kind === 'mirror' ? new StoreReleaseFiles(raw, served.pointer.release, served.pointer.manifest_sha256) : raw;
  const read = async (path: string, listed?: ManifestEntry) => {
    const file = await files.read(path, listed?.sha256);
    return file && Buffer.from(file.body);
  };
  return { read, release: served.kind === 'mirror' ? served.pointer.release : null };
}

/** Every file of the release `dir` serves (as `isoatlas serve --dir` would) that nginx may answer a
 * request with, read shard by shard, with the requests that ask for it by its canonical id (a name
 * resolves to the same file): those of a kind nginx sends files of with the file's content type. */
export async function forEachFrontFile(
  dir: string,
  visit: (entry: ManifestEntry, uris: string[]) => void,
): Promise<{ index: ManifestIndex; indexBody: Buffer }> {
  const source = openSource(dir);
  const { index, indexBody } = await forEachManifestShard(source.read, `${dir}/`, (entries) => {
    for (const entry of entries) {
      const uris = requestsOfTreeFile(entry.path, source.release)
        .filter(({ kind }) => entry.content_type === KINDS[kind])
        .map(({ uri }) => uri);
      if (uris.length) visit(entry, uris);
    }
  });
  return { index, indexBody };
}

export async function nginxConfig(opts: NginxConfigOptions): Promise<NginxConfig> {
  const limits = opts.limits ?? limitsOfEnvironment();
  const dir = resolve(opts.dir);
  const compressedDir = resolve(opts.compressedDir ?? `${dir}.compressed`);
  // nginx reads `$` in a value as a variable, with no way to escape it.
  const cacheDir = resolve(opts.cacheDir ?? DEFAULT_CACHE_DIR);
  for (const d of [dir, compressedDir, cacheDir]) {
    if (/[$"\\\n\r]/.test(d))
      throw new BadInputError(
        `${JSON.stringify(d)}: nginx cannot name a directory whose path holds $, a quote, a backslash or a line break; choose another path`,
      );
  }
  // The copies are written once every file is known, group by group (nginx-compressed.ts); a file
  // is read only for a copy missing.
  const { read } = openSource(dir);
  const copies = new CopiesWriter(compressedDir, (entry) => read(entry.path, entry));
  let files = 0;
  const { index, indexBody } = await forEachFrontFile(dir, (entry) => {
    files++;
    copies.want(entry);
  });
  const compressed = await copies.finish();
  const manifestSha256 = createHash('sha256').update(indexBody).digest('hex');
  const access = opts.access ?? resolveAccessConfig({});
  // nginx reads the served release's state from the mirror's pointer or the tree's manifest.
  const stateFile = join(dir, servedDir(dir).kind === 'mirror' ? POINTER_KEY : treePaths.manifest);
  const text = render({
    ...opts,
    dir,
    compressedDir,
    cacheDir,
    stateFile,
    limits,
    access,
    release: index.release,
    manifestSha256,
  });
  return { text, release: index.release, manifestSha256, files, compressed: { ...compressed, dir: compressedDir } };
}

/** The server's limits as `isoatlas serve` reads them; a bad ISOATLAS_* value is the caller's to fix. */
function limitsOfEnvironment(): ServerLimits {
  try {
    return serverLimits(process.env);
  } catch (err) {
    throw new UsageError(
      `${(err as Error).message}: nginx-config writes the limits \`isoatlas serve\` reads from it; set it as for serve, or unset it`,
    );
  }
}

/** A string as an nginx quoted value (values written here hold no quote, backslash or `$` but the
 * variables meant). */
const quoted = (value: string) => `"${value}"`;
/** A regular expression as an nginx quoted map key: nginx reads `\\` in a quoted string as `\`. */
/** The longest request head (`$request_length` before a body: the request line and every field) nginx
 * counts and answers itself. A field takes at least 3 bytes on the wire (a one-character name, a
 * colon, a bare LF), so a head this short cannot hold more fields than the CDN inspects. */
const SMALL_HEAD_BYTES = (HEADER_LIMITS.fields + 1) * 3 - 1;

/** A regular expression matching the decimal numbers from 0 to `most`. */
export function atMostPattern(most: number): string {
  const digits = String(most);
  const ways = digits.length > 1 ? [`[0-9]{1,${digits.length - 1}}`] : [];
  for (let i = 0; i < digits.length; i++) {
    const d = Number(digits[i]);
    const low = i === 0 && digits.length > 1 ? 1 : 0;
    const rest = digits.length - i - 1;
    const range = d - 1 === low ? String(low) : `[${low}-${d - 1}]`;
    if (d > low) ways.push(`${digits.slice(0, i)}${range}${rest > 0 ? `[0-9]{${rest}}` : ''}`);
  }
  ways.push(digits);
  return `^(?:${ways.join('|')})$`;
}

const quotedRegex = (flag: '~' | '~*', source: string) => `"${flag}${source.replace(/[\\"]/g, (c) => `\\${c}`)}"`;

const RETRY = { 'Retry-After': '5' };

type Problem = {
  status: number;
  detail: string;
  headers?: Record<string, string>;
  extra?: Record<string, unknown>;
  name?: string;
  /** nginx's own status that leads to this answer (answered with `status`). */
  code?: number;
};

/** A value nginx fills in when it answers (`$isoatlas_<name>`), as it stands in text built here. */
const slot = (name: string) => `{{${name}}}`;
/** The text with its slots as nginx variables. */
const filled = (text: string) => text.replace(/\{\{(\w+)\}\}/g, (_, name: string) => `$isoatlas_${name}`);

/** The status nginx answers a request over the anonymous limit with (limit_req_status), turned into the
 * server's 429 on its way to the problem's location. */
const RATE_CODE = 460;

/** The problem+json answers nginx gives itself, as the server would word them: for an error code of
 * nginx's, or (`name`) for a request the config sends there itself. A request not received in time
 * has none: nginx closes the connection without an answer (nginx: client_header_timeout, "the request
 * is terminated with the 408 error"). The last is for a client over its share of requests in
 * progress: the share of connections the server allows a client (the front's own connections to it
 * are not capped, so the front caps its clients). */
const nginxProblems = (limits: ServerLimits, access: AccessConfig): Problem[] => [
  {
    status: 400,
    detail: 'the request is not valid HTTP/1.1 (the request target must be an absolute path such as /api/v1/)',
  },
  { status: 400, detail: REFUSED_TARGET_DETAIL, name: 'target' },
  { status: 404, detail: 'no endpoint here; the API lives under /api/v1/ (see /api/v1/openapi.json)' },
  { status: 405, detail: `this API is read-only: the methods allowed are ${ALLOW}`, headers: { Allow: ALLOW } },
  { status: 413, detail: 'this API is read-only: requests carry no body' },
  { status: 414, detail: `the request line and headers must fit in ${limits.maxHeaderSize} bytes` },
  { status: 431, detail: `the request line and headers must fit in ${limits.maxHeaderSize} bytes` },
  { status: 500, detail: 'an unexpected error occurred in the front; it has been logged' },
  { status: 502, detail: 'the isoatlas server behind this front did not answer; try again shortly', headers: RETRY },
  { status: 503, detail: 'the isoatlas server behind this front is busy; try again shortly', headers: RETRY },
  {
    status: 504,
    detail: 'the isoatlas server behind this front did not answer in time; try again shortly',
    headers: RETRY,
  },
  connectionShareProblem(limits),
  ...rateProblem(access),
];

/** The 429 of the anonymous limit, when the front counts it (front-count.ts), as the server words it
 * and with its headers; the seconds left in the minute are nginx's to fill in. */
function rateProblem(access: AccessConfig): Problem[] {
  const counting = frontCounting(access);
  const refusal =
    counting?.perMinute == null ? null : frontCountedFields(access.open.anonymous_per_ip, 0, slot('reset')).refusal;
  return refusal ? [{ ...refusal, name: 'rate', code: RATE_CODE }] : [];
}
/** What a problem line writes for a target the front does not write. */
export const UNWRITTEN_TARGET = '[not written: the front cannot tell it holds no key]';
const HTTP_METHODS = ['GET', 'HEAD', 'OPTIONS', 'POST', 'PUT', 'PATCH', 'DELETE', 'TRACE', 'CONNECT'];

/** The bounds on what a client can hold of the front, the server's own where nginx has one
 * (edge/adapters/server-limits.ts; SECURITY.md lists them). nginx applies those it reads before a
 * request's server is known (the headers' timeout and buffers) from the default server of its
 * listen address: the front must be that server (docs/OPERATIONS.md). */
function clientLimits(limits: ServerLimits): string[] {
  const ms = (value: number) => `${value}ms`;
  return [
    '# The request line and headers in the time the server gives them, the whole of it (nginx:',
    '# client_header_timeout; the timer is not reset as bytes arrive); then the connection is closed with',
    '# a reset (reset_timedout_connection), freeing its memory at once, without an answer. The firewall',
    "# rule (docs/nginx-front.nft) keeps a client from opening a reset connection's ports again uncounted.",
    `client_header_timeout ${ms(limits.headersTimeoutMs)};`,
    'reset_timedout_connection on;',
    "# A request body (this API takes none; the server drains one): its bytes at most the headers'",
    '# time apart.',
    `client_body_timeout ${ms(limits.headersTimeoutMs)};`,
    "# An answer its client takes nothing of for the server's send timeout is cut off (nginx: send_timeout,",
    '# between two successive writes, as the server counts it).',
    `send_timeout ${ms(limits.sendTimeoutMs)};`,
    "# Idle keep-alive connections as long as the server's (and said, in Keep-Alive: timeout=), and as",
    '# many requests on one.',
    `keepalive_timeout ${ms(limits.keepAliveTimeoutMs)} ${Math.max(1, Math.round(limits.keepAliveTimeoutMs / 1000))}s;`,
    `keepalive_requests ${limits.maxRequestsPerSocket};`,
    "# A header line or the request line up to the server's bound, and the whole head in about as much:",
    '# one such buffer beyond the first (client_header_buffer_size), not several.',
    `large_client_header_buffers 1 ${limits.maxHeaderSize};`,
  ];
}

/** nginx's own codes for some of them (494: header too large). */
const NGINX_CODES: Record<number, number[]> = { 431: [494] };

function render(
  o: NginxConfigOptions & {
    compressedDir: string;
    cacheDir: string;
    stateFile: string;
    limits: ServerLimits;
    access: AccessConfig;
    release: string;
    manifestSha256: string;
  },
): string {
  const { limits, access } = o;
  const frontProblems = nginxProblems(limits, access);
  // Arrangement A: nginx counts anonymous requests itself (front-count.ts); null: the server counts all.
  const counting = frontCounting(access);
  const countedAs = counting && frontCountingValue(counting);
  const perMinute = counting?.perMinute ?? null;
  // The RateLimit fields nginx gives with what it counted: the minute's, without what is left.
  const rate = perMinute === null ? null : frontCountedFields(access.open.anonymous_per_ip, 0, slot('reset')).headers;
  const rateFields = (always: string) =>
    Object.entries(rate ?? {}).map(([name, value]) => `add_header ${name} ${quoted(filled(value))}${always};`);
  // The spellings of the key prefix the server reads as one (nginx-redaction.ts).
  const keyShaped = keyPrefixPattern();
  const connectionShare = connectionShareProblem(limits);
  // At URIs, not named locations: nginx redirects to a named location only once it has a URI, and
  // a request line it refuses has none.
  const problems = '/.isoatlas/problem/';
  const problemUri = (p: Problem) => `${problems}${p.name ?? p.status}`;
  // A code of nginx's own is answered with the problem's status (`=431`): without it, nginx keeps
  // its code, which it sends as 400, under a body that says 431.
  const errorPages = frontProblems
    .filter((p) => !p.name || p.code)
    .map((p) => {
      const codes = p.code ? [p.code] : NGINX_CODES[p.status];
      return codes
        ? `    error_page ${codes.join(' ')} =${p.status} ${problemUri(p)};`
        : `    error_page ${p.status} ${problemUri(p)};`;
    });
  const refusedTarget = frontProblems.find((p) => p.name === 'target')!;
  const indent = (lines: string[], by = '    ') => lines.map((l) => by + l);
  const proxyHeaders = [
    'proxy_set_header Host $host;',
    'proxy_set_header Connection "";',
    'proxy_set_header X-Forwarded-For $remote_addr;',
    // Said by the front or by nobody: a client's own is never passed on. The state is read only on
    // the way to a file of a request nginx counted (empty elsewhere: not sent).
    `proxy_set_header ${FRONT_COUNTED_HEADER} ${counting ? '$isoatlas_counted' : '""'};`,
    `proxy_set_header ${FRONT_STATE_HEADER} ${counting ? '$isoatlas_state' : '""'};`,
  ];
  const cors = Object.entries(CORS_HEADERS).map(([name, value]) => `add_header ${name} ${quoted(value)} always;`);
  const fromAdmission = [
    'Cache-Control',
    'Vary',
    RELEASE_HEADER,
    'RateLimit-Limit',
    'RateLimit-Remaining',
    'RateLimit-Reset',
    'RateLimit-Policy',
  ];
  // A header's name as nginx writes it in variable names: `$upstream_http_ratelimit_limit`.
  const snake = (header: string) => header.toLowerCase().replace(/-/g, '_');
  const variable = (header: string) => `$isoatlas_${snake(header)}`;
  // `location /` jumps to a kind's file location by answering a status of its own: the one whose
  // admission the server counts, or (`front`) the one of a request nginx counted itself.
  const kinds = Object.keys(KINDS) as Kind[];
  const jumps = kinds
    .flatMap((kind) => [{ kind, front: false }, ...(counting ? [{ kind, front: true }] : [])])
    .map((j, i) => ({ ...j, status: 418 + i, label: j.front ? `${j.kind}_front` : j.kind }));
  const admissionUri = (kind: Kind, front: boolean) =>
    `/.isoatlas${systemPaths.admission.path}/${kind}${front ? '/front' : ''}`;
  const STATE_URI = '/.isoatlas/state';
  const FRONT_PASS = '@isoatlas_front_pass';
  // What the admission names: the file nginx sends, and the headers that go with it.
  const named = Object.values(FRONT_FILE_HEADERS);

  // What nginx keeps for a request it counted, under this config's manifest (a config written for
  // the next release keeps nothing the one before kept, a referral to the server included), the
  // served release's state as nginx read it, the request's target and coding (and nothing of the
  // client's): what the server lets it keep, for as long as the server says (X-Accel-Expires,
  // front-count.ts), never by the answer's own Cache-Control.
  const keep = (what: string) => [
    '    proxy_cache isoatlas_front;',
    `    proxy_cache_key "${what} ${o.manifestSha256.slice(0, 16)} $isoatlas_state $request_method $request_uri $http_accept_encoding";`,
    '    proxy_ignore_headers Cache-Control Expires Set-Cookie;',
    '    proxy_cache_convert_head off;',
    '    proxy_cache_lock on;',
    '    # No keyed request comes here; one that did would neither read nor fill what is kept.',
    '    proxy_cache_bypass $http_authorization;',
    '    proxy_no_cache $http_authorization;',
  ];

  const fileLocation = (kind: Kind, front: boolean) => {
    // A request nginx counted gets the minute's RateLimit fields from nginx, the rest from the admission.
    const fromServer = front ? fromAdmission.filter((h) => !h.startsWith('RateLimit-')) : fromAdmission;
    const pass = front ? FRONT_PASS : '@isoatlas';
    return [
      `location @isoatlas_${kind}${front ? '_files' : ''} {`,
      `    auth_request ${admissionUri(kind, front)};`,
      ...[...fromServer, ...named].map((h) => `    auth_request_set ${variable(h)} $upstream_http_${snake(h)};`),
      '    types { }',
      `    default_type ${quoted(KINDS[kind])};`,
      '    etag off;',
      '    max_ranges 0;',
      "    # $isoatlas_path names the file by absolute path: the tree's or mirror's, or a compressed copy.",
      '    root /;',
      '    add_header Last-Modified "";',
      `    add_header ETag ${variable(FRONT_FILE_HEADERS.etag)};`,
      '    # An empty value adds no header: identity has no Content-Encoding, a last page no Link.',
      `    add_header Content-Encoding ${variable(FRONT_FILE_HEADERS.coding)};`,
      `    add_header Link ${variable(FRONT_FILE_HEADERS.link)};`,
      ...fromServer.map((h) => `    add_header ${h} ${variable(h)};`),
      ...(front ? indent(rateFields('')) : []),
      '    add_header Vary Accept-Encoding;',
      ...indent(cors),
      `    access_log ${o.accessLog} isoatlas_file;`,
      '    # Refused or not a file as it is (the server says so), or a file missing: the server answers it.',
      `    error_page 403 500 = ${pass};`,
      ...errorPages.filter((l) => !/ 500 /.test(l)),
      `    try_files $isoatlas_path ${pass};`,
      '}',
    ];
  };

  // A request nginx counted: first the served release's state (nginx: auth_request_set, from a
  // subrequest for the state file), then, past the access phase (a `return` would jump before it,
  // try_files after it), the file's location. A state nginx cannot read sends it to the server.
  const stateLocation = (kind: Kind) => [
    `location @isoatlas_${kind}_front {`,
    `    auth_request ${STATE_URI};`,
    '    auth_request_set $isoatlas_state $sent_http_etag;',
    `    error_page 403 500 = ${FRONT_PASS};`,
    ...errorPages.filter((l) => !/ 500 /.test(l)),
    '    # A name no root holds: always on to the next.',
    `    try_files /.isoatlas/state-read @isoatlas_${kind}_files;`,
    '}',
  ];

  // The admission of a request nginx counted: asked with none of the client's headers but
  // Accept-Encoding, so that its answer is the same for every anonymous client, and kept.
  const frontAdmission = (kind: Kind) => [
    `location = ${admissionUri(kind, true)} {`,
    '    internal;',
    `    proxy_pass http://isoatlas_server${systemPaths.admission.path};`,
    '    proxy_pass_request_body off;',
    '    proxy_pass_request_headers off;',
    '    proxy_set_header Host $host;',
    '    proxy_set_header Connection "";',
    '    proxy_set_header Content-Length "";',
    '    proxy_set_header Accept-Encoding $http_accept_encoding;',
    `    proxy_set_header ${FRONT_MANIFEST_HEADER} "${o.manifestSha256}";`,
    `    proxy_set_header ${FRONT_TARGET_HEADER} $request_uri;`,
    `    proxy_set_header ${FRONT_TYPE_HEADER} ${quoted(KINDS[kind])};`,
    `    proxy_set_header ${FRONT_COUNTED_HEADER} ${quoted(countedAs ?? '')};`,
    `    proxy_set_header ${FRONT_STATE_HEADER} $isoatlas_state;`,
    ...keep(`admission ${kind}`),
    '}',
  ];

  // Who nginx counts itself (arrangement A): an anonymous GET or HEAD (no Authorization; nginx cannot
  // tell an empty one from none), from a client it can count as the server does (nginx-client.ts),
  // per client and minute; /health is never counted. The server is told so and counts it no more.
  const frontCountingLines = (): string[] => {
    if (!counting || !countedAs) return [];
    // A head too short to hold more fields than the CDN inspects (nginx cannot count fields): a
    // longer one goes to the server's admission, which refuses it past the bounds as the CDN does.
    const smallHead = [
      'map $request_length $isoatlas_small_head {',
      `    ${quotedRegex('~', atMostPattern(SMALL_HEAD_BYTES))} 1;`,
      '    default "";',
      '}',
    ];
    const who =
      perMinute === null
        ? [
            ...smallHead,
            'map "$http_authorization|$isoatlas_small_head" $isoatlas_front_counts {',
            '    "|1" 1;',
            '    default "";',
            '}',
          ]
        : [
            ...smallHead,
            '# The client as the server counts it (edge/access/client-key.ts), or none: nginx does not count it.',
            'map $remote_addr $isoatlas_client {',
            ...clientKeyMap(counting.ipv6Prefix).map((l) => `    ${l}`),
            '}',
            'map "$http_authorization|$isoatlas_small_head|$isoatlas_client" $isoatlas_front_counts {',
            `    ${quotedRegex('~', '^\\|1\\|.')} 1;`,
            '    default "";',
            '}',
          ];
    const minute =
      perMinute === null
        ? []
        : [
            'map "$isoatlas_counted|$uri" $isoatlas_count_key {',
            `    ${quotedRegex('~', '^[^|]+\\|/health$')} "";`,
            `    ${quotedRegex('~', '^[^|]+\\|')} "$isoatlas_client $isoatlas_minute";`,
            '    default "";',
            '}',
            '# The minute (with the offset, so that a clock set back never reads an old minute again) and the',
            "# seconds left in it, as the server's RateLimit-Reset and Retry-After say them.",
            'map $time_iso8601 $isoatlas_minute {',
            `    ${quotedRegex('~', '^(.{16}):\\d\\d(.*)$')} $1$2;`,
            '}',
            'map $time_iso8601 $isoatlas_second {',
            `    ${quotedRegex('~', '^.{17}(\\d\\d)')} $1;`,
            '}',
            'map $isoatlas_second $isoatlas_reset {',
            ...Array.from({ length: 60 }, (_, s) => `    ${String(s).padStart(2, '0')} ${60 - s};`),
            '    default 1;',
            '}',
            `limit_req_zone $isoatlas_count_key zone=isoatlas_anonymous:16m rate=1r/m;`,
            '# The RateLimit fields nginx adds to an answer of the server that has none (one it kept).',
            ...Object.entries(rate ?? {}).flatMap(([name, value]) => [
              `map $upstream_http_${snake(name)} $isoatlas_own_${snake(name)} {`,
              `    "" ${quoted(filled(value))};`,
              '    default "";',
              '}',
            ]),
          ];
    return [
      "# Anonymous requests nginx counts itself, at the server's limit, and tells the server so (front-count.ts).",
      ...who,
      'map "$isoatlas_front_counts $request_method" $isoatlas_counted {',
      `    "1 GET" ${quoted(countedAs)};`,
      `    "1 HEAD" ${quoted(countedAs)};`,
      '    default "";',
      '}',
      ...minute,
      '',
    ];
  };

  const problemLocation = (p: Problem) => {
    const body = new TextDecoder().decode(
      problemBody(slot('instance'), { status: p.status, detail: p.detail, extra: p.extra }),
    );
    return [
      `location = ${problemUri(p)} {`,
      '    internal;',
      '    types { }',
      `    default_type ${quoted(PROBLEM_TYPE)};`,
      ...indent(cors),
      '    add_header Cache-Control "no-store" always;',
      ...Object.entries(p.headers ?? {}).map(
        ([name, value]) => `    add_header ${name} ${quoted(filled(value))} always;`,
      ),
      `    access_log ${o.accessLog} isoatlas_problem;`,
      `    return ${p.status} '${filled(body)}';`,
      '}',
    ];
  };

  return [
    `${GENERATED_MARK}, written by \`isoatlas nginx-config\` (isoatlas ${o.version}) on ${new Date().toISOString()}`,
    `# from ${o.dir}: release ${o.release}, manifest sha256 ${o.manifestSha256}.`,
    '#',
    '# Include it in the http block of nginx.conf (Debian: /etc/nginx/conf.d/isoatlas.conf). GET and HEAD',
    '# requests for a resource a file answers (a gene, an isoform, their lists, a structure file), with no',
    `# query and no conditional or range header, are answered from the file \`isoatlas serve\` at ${o.upstream}`,
    `# names when it admits them (${counting ? 'anonymous ones counted here, their admissions kept; keyed ones counted by the server' : 'counted by the server'});`,
    '# every other request (search, keys, redirects, refusals) is',
    '# passed to that server, which must run with --trust-proxy <the address nginx connects from> and',
    '# listen where only nginx reaches it. Regenerate it and reload nginx after each sync or rebuild (it',
    "# writes the new release's compressed copies): until then the server answers everything.",
    '',
    ...frontCountingLines(),
    'upstream isoatlas_server {',
    `    server ${o.upstream};`,
    '    keepalive 32;',
    "    # Idle connections to the server closed before the server's keep-alive timeout closes them, so",
    '    # that nginx never sends a request on one the server is closing (nginx: upstream keepalive_timeout).',
    `    keepalive_timeout ${Math.floor(limits.keepAliveTimeoutMs / 2)}ms;`,
    '}',
    '',
    '# Requests in progress per client address (limit_conn below); idle connections are bounded by',
    "# worker_connections and nginx's timeouts instead (docs/OPERATIONS.md).",
    'limit_conn_zone $binary_remote_addr zone=isoatlas_clients:10m;',
    '',
    `# What nginx may answer again without the server (front-count.ts): under the served release's state,`,
    '# so never a release before it.',
    `proxy_cache_path ${o.cacheDir} levels=1:2 keys_zone=isoatlas_front:16m max_size=256m inactive=10m use_temp_path=off;`,
    '',
    '# Only a GET or HEAD with no query, no conditional header and no range is answered from a file.',
    'map "$request_method $is_args$http_if_none_match$http_if_match$http_if_modified_since$http_if_unmodified_since$http_if_range$http_range" $isoatlas_plain {',
    '    "GET " 1;',
    '    "HEAD " 1;',
    '    default "";',
    '}',
    '# The kind of file such a request may be answered with, by the shape of its path (a route declared',
    '# as a file, a structure file); the server names the file, or none, when it admits the request.',
    'map "$isoatlas_plain $uri" $isoatlas_kind {',
    ...FRONT_SHAPES.map(({ kind, pattern }) => `    ${quotedRegex('~', `^1 ${pattern.slice(1)}`)} ${kind};`),
    '    default "";',
    '}',
    '# Where `location /` sends it: to the file location of a request nginx counted (`_front`), or of one',
    '# whose admission the server counts.',
    `map ${counting ? '"$isoatlas_kind $isoatlas_front_counts"' : '$isoatlas_kind'} $isoatlas_jump {`,
    ...jumps.map((j) => `    ${quoted(counting ? `${j.kind} ${j.front ? '1' : ''}` : j.kind)} ${j.label};`),
    '    default "";',
    '}',
    `# The file the admission named: in ${o.dir}, or its compressed copy in ${o.compressedDir}`,
    '# (edge/server/nginx-compressed.ts).',
    `map ${variable(FRONT_FILE_HEADERS.copy)} $isoatlas_path {`,
    `    "" "${o.dir}${variable(FRONT_FILE_HEADERS.file)}";`,
    `    default "${o.compressedDir}${variable(FRONT_FILE_HEADERS.copy)}";`,
    '}',
    '',
    "# Log lines in the shape of the server's (which logs what it answers): the answers nginx gives itself.",
    'map $request_time $isoatlas_ms {',
    '    "~^0\\.0*(\\d+)$" $1;',
    '    "~^(\\d+)\\.(\\d+)$" $1$2;',
    '}',
    '# What the front writes of a request target (edge/server/nginx-redaction.ts). nginx cannot decode a',
    '# target as the server does, nor know the secrets issued, so it writes a target only when it cannot',
    "# hold a piece of a key: short runs of a secret's characters between separators, no `%`. Anything",
    '# holding the key prefix, in any spelling the server reads as one (a letter in either case, each',
    '# character percent-encoded in either hex case, once or more), is never written.',
    '#',
    "# A problem's instance: such a target, or `/`.",
    'map $request_uri $isoatlas_instance {',
    `    ${quotedRegex('~', keyShaped)} "/";`,
    `    ${quotedRegex('~', `^${SAFE_TARGET}$`)} $request_uri;`,
    '    default "/";',
    '}',
    '# A file answer, which the server admitted by its target (a path of the route table naming a file):',
    '# the target as sent. The request line is read: one nginx refuses has no parsed URI.',
    'map $request $isoatlas_file_path {',
    `    ${quotedRegex('~', keyShaped)} "[redacted: shaped like an API key]";`,
    '    "~^\\S+ (\\S+)" $1;',
    '    default "";',
    '}',
    "# An answer of the front's own (a refusal, the server down): such a target; or else the route of the",
    '# route table it names, as the table spells it; or else nothing of it.',
    'map $request $isoatlas_problem_path {',
    `    ${quotedRegex('~', keyShaped)} "[redacted: shaped like an API key]";`,
    `    ${quotedRegex('~', `^\\S+ (${SAFE_TARGET})(?: |$)`)} $1;`,
    ...routeShapes().map(
      ({ pattern, route }) => `    ${quotedRegex('~', `^\\S+ ${pattern}(?: |$)`)} ${quoted(route)};`,
    ),
    `    default ${quoted(UNWRITTEN_TARGET)};`,
    '}',
    "# The method as sent, when it is one of HTTP's (a client chooses the word): from the request line, as",
    '# nginx makes a request it redirects to an error page a GET.',
    'map $request $isoatlas_method {',
    `    ${quotedRegex('~', `^(${HTTP_METHODS.join('|')}) `)} $1;`,
    '    default "other";',
    '}',
    `log_format isoatlas_file escape=json '{"level":"info","time":"$time_iso8601","client":"$remote_addr","method":"$isoatlas_method","path":"$isoatlas_file_path","status":$status,"bytes":$body_bytes_sent,"ms":$isoatlas_ms,"release":"${variable(RELEASE_HEADER)}"}';`,
    '# Targets refused before any location matches, as the server refuses them (edge/contract/targets.ts):',
    '# locations match the decoded, normalized $uri, so this reads the request line as sent.',
    'map $request $isoatlas_bad_target {',
    ...NGINX_REFUSED_REQUEST.map((re) => `    ${quotedRegex('~', re)} 1;`),
    '    default "";',
    '}',
    '# Not again on the way to another problem answer (nginx runs the server-level rewrites once more',
    "# there); nginx's own 400 for a refused target (it refuses some, such as %00, itself) is worded as the",
    '# server words it.',
    'map $uri $isoatlas_refuse_target {',
    `    ${quotedRegex('~', `^${problems.replace(/\./g, '\\.')}(?!${refusedTarget.status}$)`)} "";`,
    '    default $isoatlas_bad_target;',
    '}',
    '# An answer nginx kept and gives again (front-count.ts): the server let it keep it only for a target',
    '# its own log writes as it is.',
    'map $upstream_cache_status $isoatlas_kept {',
    '    HIT 1;',
    '    default "";',
    '}',
    `log_format isoatlas_kept escape=json '{"level":"info","time":"$time_iso8601","client":"$remote_addr","method":"$isoatlas_method","path":"$request_uri","status":$status,"bytes":$body_bytes_sent,"ms":$isoatlas_ms,"release":"$sent_http_x_isoatlas_release"}';`,
    `log_format isoatlas_problem escape=json '{"level":"info","time":"$time_iso8601","client":"$remote_addr","method":"$isoatlas_method","path":"$isoatlas_problem_path","status":$status,"bytes":$body_bytes_sent,"ms":$isoatlas_ms,"release":null}';`,
    '',
    'server {',
    `    listen ${o.listen};`,
    `    server_name ${o.serverName};`,
    '    server_tokens off;',
    ...indent(clientLimits(limits)),
    '    recursive_error_pages on;',
    `    limit_conn isoatlas_clients ${limits.maxConnectionsPerAddress};`,
    ...(perMinute === null
      ? []
      : [
          '    # Anonymous requests per client and minute: a bucket of its own for each (the key holds the',
          "    # minute), leaking at nginx's slowest rate (1r/m: less than one request within its minute),",
          `    # so exactly burst + 1 = ${perMinute} are admitted in a minute, as the server's fixed window admits.`,
          `    limit_req zone=isoatlas_anonymous burst=${perMinute - 1} nodelay;`,
          `    limit_req_status ${RATE_CODE};`,
        ]),
    `    limit_conn_status ${connectionShare.status};`,
    '    limit_conn_log_level warn;',
    '    access_log off;',
    '    # nginx writes the request line, as sent, into every error line about a request, and its error',
    '    # log cannot be masked: only what is critical is logged, not a refusal or a failed upstream (its',
    '    # 502 is in the access log).',
    `    error_log ${errorLogOf(o.accessLog)} crit;`,
    "    # Answers are compressed already where they should be; nginx's own gzip would weaken their ETags.",
    '    gzip off;',
    '    proxy_http_version 1.1;',
    "    # An answer a client does not read is held in nginx's few memory buffers, then by the server (whose",
    '    # send timeout ends it), never spooled to a temporary file: clients that never read would each',
    '    # put up to a whole pack on disk.',
    '    proxy_max_temp_file_size 0;',
    ...indent(proxyHeaders),
    ...errorPages,
    `    if ($isoatlas_refuse_target) { rewrite ^ ${problemUri(refusedTarget)} last; }`,
    '',
    '    location / {',
    ...jumps.map(({ label, status }) => `        error_page ${status} = @isoatlas_${label};`),
    ...indent(errorPages),
    ...jumps.map(({ label, status }) => `        if ($isoatlas_jump = ${label}) { return ${status}; }`),
    '        proxy_pass http://isoatlas_server;',
    '    }',
    '',
    "    # The server's own paths the front refuses (edge/contract/dispatch.ts): admissions are nginx's to ask,",
    '    # metrics are scraped at the server itself.',
    ...Object.values(systemPaths).flatMap((entry) =>
      entry.front === 'refuse' ? [`    location = ${entry.path} { return 404; }`] : [],
    ),
    '',
    '    location @isoatlas {',
    '        proxy_pass http://isoatlas_server;',
    '    }',
    '',
    ...(counting
      ? [
          "    # The served release as nginx reads it: the ETag of the mirror's pointer or the tree's manifest,",
          '    # which a sync or a rebuild changes.',
          `    location = ${STATE_URI} {`,
          '        internal;',
          `        alias ${o.stateFile};`,
          '        types { }',
          '        default_type application/octet-stream;',
          '        etag on;',
          '        access_log off;',
          '    }',
          '',
          "    # A request nginx counted and did not answer from a file: the server's to answer, not to count.",
          `    location ${FRONT_PASS} {`,
          '        proxy_pass http://isoatlas_server;',
          ...indent(proxyHeaders, '        '),
          ...indent(keep('answer')),
          '        # What the server answered it logged; what nginx answers again, nginx logs.',
          `        access_log ${o.accessLog} isoatlas_kept if=$isoatlas_kept;`,
          ...(rate
            ? [
                "        # The minute's RateLimit fields where the answer has none: one kept is kept without them.",
                ...Object.keys(rate).map((h) => `        add_header ${h} $isoatlas_own_${snake(h)} always;`),
              ]
            : []),
          '    }',
          '',
          ...kinds.flatMap((kind) => [
            ...indent(stateLocation(kind)),
            '',
            ...indent(fileLocation(kind, true)),
            '',
            ...indent(frontAdmission(kind)),
            '',
          ]),
        ]
      : []),
    '    # One admission per kind: the server names a file only of the content type nginx sends it with.',
    ...kinds.flatMap((kind) => [
      `    location = ${admissionUri(kind, false)} {`,
      '        internal;',
      `        proxy_pass http://isoatlas_server${systemPaths.admission.path};`,
      '        proxy_pass_request_body off;',
      ...indent(proxyHeaders, '        '),
      '        proxy_set_header Content-Length "";',
      `        proxy_set_header ${FRONT_MANIFEST_HEADER} "${o.manifestSha256}";`,
      `        proxy_set_header ${FRONT_TARGET_HEADER} $request_uri;`,
      `        proxy_set_header ${FRONT_TYPE_HEADER} ${quoted(KINDS[kind])};`,
      '    }',
      '',
    ]),
    ...kinds.flatMap((kind) => [...indent(fileLocation(kind, false)), '']),
    ...frontProblems.flatMap((p) => [...indent(problemLocation(p)), '']),
    '}',
    '',
  ].join('\n');
}

/** The front's error log: error.log beside its access log (Debian's nginx's own, by default; the
 * standalone nginx's below, in the tests). */
const errorLogOf = (accessLog: string) => join(dirname(accessLog), 'error.log');

/** Writes the config to `out` through a temporary name and a rename (nginx never reads half a file);
 * an existing file is replaced only when an earlier run wrote it. */
export async function writeNginxConfig(out: string, text: string): Promise<void> {
  if (!existsSync(dirname(out)))
    throw new UsageError(
      `the folder of --out ${out} does not exist: create it first (mkdir -p ${dirname(out)}), or choose another --out`,
    );
  if (existsSync(out)) {
    const head = readFileSync(out, 'utf8').slice(0, GENERATED_MARK.length);
    if (head !== GENERATED_MARK)
      throw new BadInputError(
        `${out} exists and was not written by \`isoatlas nginx-config\` (it does not start with "${GENERATED_MARK}"): choose another --out, or move that file away first`,
      );
  }
  const tmp = join(dirname(out), `.${basename(out)}.${process.pid}.tmp`);
  await writeFile(tmp, text);
  await rename(tmp, out);
}

/** Runs the front with nginx from a directory of its own, without root or the system's nginx.conf
 * (tests, benchmarks, a trial run): writes `<prefix>/nginx.conf` (pid, temporary files and error log
 * inside `prefix`, one worker, the front included in its http block) and returns nginx's arguments.
 * Requests are logged by the front's own error_log (critical lines only), as under Debian's nginx. */
export function standaloneNginx(prefix: string, frontConfig: string): { args: string[]; errorLog: string } {
  const tmp = join(prefix, 'tmp');
  mkdirSync(tmp, { recursive: true });
  const errorLog = join(prefix, 'error.log');
  // Started as root, nginx would run its worker as nobody, who may not read a private directory.
  const user = process.getuid?.() === 0 ? `user ${userInfo().username};\n` : '';
  const temp = ['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((k) => `  ${k}_temp_path ${tmp};`).join('\n');
  const conf = join(prefix, 'nginx.conf');
  writeFileSync(
    conf,
    `${user}worker_processes 1;
pid ${join(prefix, 'nginx.pid')};
events { worker_connections 4096; }
http {
${temp}
  sendfile on;
  tcp_nopush on;
  include ${frontConfig};
}
`,
  );
  return { args: ['-p', prefix, '-c', conf, '-e', errorLog], errorLog };
}
