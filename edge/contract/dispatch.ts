// The dispatch table: every path a server of the atlas answers, in the order a request is matched:
// the server's own system paths, then the kinds of files served beside the API, then the API's routes
// (routes.ts). The handler (edge/handler.ts), `isoatlas serve` (edge/server/serve.ts), its metrics'
// labels, the Lambda@Edge adapter and the nginx generator read it; none keeps a list of paths of its
// own. Each consumer binds the entries with a type mapped over their ids, so an entry added here
// without its answer, or without its place in the front, does not compile.
import { routes, type RouteId } from './routes.js';
import { links, treePaths } from './tree.js';
import { HISTORY_KEY, POINTER_KEY, RELEASE_NAME, objectSha, releasePublicPath } from './store-layout.js';
import { matchRoute, type Match } from '../router.js';
import { packSha } from './packs.js';

/** Who may ask for an entry, and whether access control (keys, limits) sees the request:
 * - `open`: answered before access control, to any method: never keyed or counted;
 * - `metrics`: as open, but only when the server runs with --metrics; otherwise no endpoint;
 * - `front`: answered only to a GET from a trusted front (serve --trust-proxy); to anyone else, no endpoint;
 * - `checked`: answered after access control: keyed when keys are required, counted against the limits. */
export type AccessClass = 'open' | 'metrics' | 'front' | 'checked';

/** What the nginx front (edge/server/nginx-config.ts) does with a request for an entry:
 * - `pass`: passes it to the server;
 * - `refuse`: answers 404 itself (the server's own paths, never reached through the front);
 * - `files`: answers it from the file the server names when it admits it (edge/server/front-file.ts), else passes it. */
export type FrontRule = 'pass' | 'refuse' | 'files';

interface SystemPath {
  path: string;
  summary: string;
  access: Exclude<AccessClass, 'checked'>;
  front: Exclude<FrontRule, 'files'>;
}

/** The paths `isoatlas serve` answers around the handler; the handler itself answers none of them
 * (at the CDN, or when the access class says no, they are no endpoint). */
export const systemPaths = {
  health: {
    path: '/health',
    access: 'open',
    front: 'pass',
    summary: 'what is served, for a load balancer or a service manager; 503 while no whole release can be read',
  },
  metrics: {
    path: '/metrics',
    access: 'metrics',
    front: 'refuse',
    summary: 'Prometheus text format, scraped at the server itself',
  },
  admission: {
    path: '/admission',
    access: 'front',
    front: 'refuse',
    summary: 'asked by the nginx front before it answers a request from a file',
  },
} as const satisfies Record<string, SystemPath>;
export type SystemPathId = keyof typeof systemPaths;

/** What a deployment serves beside the API: which file kinds apply. */
export interface FileScope {
  /** Structure files (`/structures/…` of a tree, `/releases/<r>/structures/…` of a store): the
   * local server and mirrors; at the CDN they come from the bucket. */
  structureFiles: boolean;
  /** A mirror's store files (current.json, releases.json, objects/…, and packs/…, streamed from its
   * objects), for other mirrors to sync from. */
  storeFiles: boolean;
}

interface FileKind {
  summary: string;
  /** Where it is answered: everywhere the handler runs, or where the deployment's scope says so. */
  applies: 'always' | keyof FileScope;
  front: FrontRule;
  /** What the path names, or null when it is not a file of this kind. */
  match(pathname: string): object | null;
}

/** `/structures/`: the tree's directory of structure files, served as the current release's. */
const STRUCTURES = `/${treePaths.structureFile('').split('/')[0]}/`;
/** `/releases/<release>/structures/<name>`: where a store's structure redirects point. */
const RELEASE_STRUCTURE = new RegExp(
  `^/${releasePublicPath(`(${RELEASE_NAME.source.slice(1, -1)})`, STRUCTURES.slice(1))}([^/]+)$`,
);

/** The kinds of files served beside the API, each with its access class `checked`. */
export const fileKinds = {
  docs_file: {
    summary: 'a script or style the docs page loads (`/api/v1/docs/<file>`): not an API resource, so not a route',
    applies: 'always',
    front: 'pass',
    match(pathname: string): { name: string } | null {
      const prefix = `${links.docs()}/`;
      const name = pathname.startsWith(prefix) ? pathname.slice(prefix.length) : null;
      return name !== null && !name.includes('/') ? { name } : null;
    },
  },
  structure_file: {
    summary:
      "a predicted structure's mmCIF file: the current release's at /structures/<name>, a pinned one's at /releases/<release>/structures/<name>",
    applies: 'structureFiles',
    front: 'files',
    /** `release` is null for the current release's path. A tree path's name may hold `/`: it is no
     * structure file, answered 404. */
    match(pathname: string): { release: string | null; name: string } | null {
      if (pathname.startsWith(STRUCTURES)) return { release: null, name: pathname.slice(STRUCTURES.length) };
      const m = RELEASE_STRUCTURE.exec(pathname);
      return m ? { release: m[1], name: m[2] } : null;
    },
  },
  store_file: {
    summary:
      "a mirror's store files as they are (the pointer, the history, the objects by their exact names), and its releases' packs, streamed from the objects (one byte range or whole)",
    applies: 'storeFiles',
    front: 'pass',
    match(pathname: string): { key: string } | null {
      const key = pathname.slice(1);
      return key === POINTER_KEY || key === HISTORY_KEY || objectSha(key) !== null || packSha(key) !== null
        ? { key }
        : null;
    },
  },
} as const satisfies Record<string, FileKind>;
export type FileKindId = keyof typeof fileKinds;
export type FileMatch<K extends FileKindId> = NonNullable<ReturnType<(typeof fileKinds)[K]['match']>>;

/** Where the request for a structure file of the tree (`structures/<id>.cif`) is: the current
 * release's path, or a pinned release's (`release`): the inverse of structure_file's match. */
export const structureFilePath = (treePath: string, release: string | null) =>
  `/${release === null ? treePath : releasePublicPath(release, treePath)}`;

/** What answers a request, from a bounded set (the log's `route` and the metrics' label): an entry
 * of the table, or `other` (no endpoint, or a path the router refuses). */
export type AnswerLabel = SystemPathId | FileKindId | RouteId | 'other';

/** Every entry in dispatch order, with its access class and what the front does with it. Routes are
 * answered from files by the front when the server names a file for the request (front-file.ts). */
export const dispatchTable: readonly {
  label: Exclude<AnswerLabel, 'other'>;
  group: 'system' | 'file' | 'route';
  access: AccessClass;
  front: FrontRule;
}[] = [
  ...(Object.entries(systemPaths) as [SystemPathId, SystemPath][]).map(([label, e]) => ({
    label,
    group: 'system' as const,
    access: e.access,
    front: e.front,
  })),
  ...(Object.entries(fileKinds) as [FileKindId, FileKind][]).map(([label, e]) => ({
    label,
    group: 'file' as const,
    access: 'checked' as const,
    front: e.front,
  })),
  ...routes.map((r) => ({ label: r.id, group: 'route' as const, access: 'checked' as const, front: 'files' as const })),
];

export const answerLabels: readonly AnswerLabel[] = [...dispatchTable.map((e) => e.label), 'other'];

const systemByPath = new Map<string, SystemPathId>(
  (Object.entries(systemPaths) as [SystemPathId, SystemPath][]).map(([id, e]) => [e.path, id]),
);

/** The system path a pathname is, if any (the first step of `dispatch`). */
export const systemPathAt = (pathname: string): SystemPathId | null => systemByPath.get(pathname) ?? null;

/** Whether the server answers a system path to this request, by its access class; when not, the
 * request goes on to the handler, for which it is no endpoint. */
export function systemPathAnswered(
  id: SystemPathId,
  request: { method: string; viaFront?: boolean; metrics: boolean },
): boolean {
  const access: SystemPath['access'] = systemPaths[id].access;
  switch (access) {
    case 'open':
      return true;
    case 'metrics':
      return request.metrics;
    case 'front':
      return request.viaFront === true && request.method === 'GET';
  }
}

export type Dispatched =
  | { group: 'system'; id: SystemPathId }
  | { [K in FileKindId]: { group: 'file'; id: K; match: FileMatch<K> } }[FileKindId]
  | { group: 'route'; id: RouteId; match: Match }
  /** No entry, or a path the router refuses (`refusal`, answered after access control like any other). */
  | { group: 'none'; refusal?: unknown };

/** The entry a request path names, trying the table in order; file kinds only where `scope` serves them. */
export function dispatch(pathname: string, scope: FileScope): Dispatched {
  const system = systemPathAt(pathname);
  if (system !== null) return { group: 'system', id: system };
  for (const [id, kind] of Object.entries(fileKinds) as [FileKindId, FileKind][]) {
    if (kind.applies !== 'always' && !scope[kind.applies]) continue;
    const match = kind.match(pathname);
    if (match !== null) return { group: 'file', id, match } as Dispatched;
  }
  try {
    const match = matchRoute(pathname);
    return match ? { group: 'route', id: match.route.id, match } : { group: 'none' };
  } catch (refusal) {
    return { group: 'none', refusal };
  }
}
