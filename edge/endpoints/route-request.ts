// What every endpoint works with: the request, its route's validated parameters, and the release
// the request is answered from (its verified files and its edge data).
import type { OriginObject } from '../origin.js';
import { OriginError } from '../origin.js';
import type { VerifiedOrigin } from '../origins/verified.js';
import type { ReleaseData } from '../release-data.js';
import type { QueryValues } from '../router.js';
import { bodyResponse, problem } from '../responses.js';
import { contentTypeOf, links, pinLink } from '../contract/tree.js';
import type { ReleaseListBody } from '../contract/schemas.js';
import { whereabouts, type IdKind } from './id-history.js';

/** One release of the tree, as the routes read it. */
export interface Release {
  /** Every file checked against the manifest; the ETag of a file is its manifest sha256. */
  origin: VerifiedOrigin;
  /** Alias maps, the structure map and the search index. */
  data: ReleaseData;
  /** Public path of a tree file, below the structure base (e.g. `releases/<r>/structures/x.cif`). */
  publicPath(treePath: string): string;
  /** The release's name, from its manifest. */
  name(): Promise<string>;
}

/** What a request can be answered from: the current release, any release named, and the listing. */
export interface Releases {
  /** The current release, or the named one; null when there is no such release. */
  get(release?: string): Promise<Release | null>;
  list(): Promise<ReleaseListBody>;
  /** A kept release, opened to look an id up in (edge/endpoints/id-history.ts) apart from the releases
   * requests are answered from, so that a walk through the history does not push those out. */
  lookup(release: string): Promise<Release | null>;
}

export interface RouteRequest {
  request: Request;
  url: URL;
  /** Path parameters, decoded and checked by the router. */
  params: Record<string, string>;
  /** Query parameters, validated against the route's declared bounds (defaults filled in). */
  query: QueryValues;
  /** Cache-Control of the route's 200. */
  cacheControl: string;
  release: Release;
  releases: Releases;
  /** Where structure redirects point (`<base>/<public path>`); root-relative when unset. */
  structureBaseUrl?: string;
  /** The release the request named, which links the route writes into a problem carry (the handler
   * pins the links of bodies and headers itself, edge/pinning.ts); undefined when it named none. */
  pin?: string;
}

/** A link as this answer writes it: carrying the release the request named, if it named one. */
const linkFor = (route: RouteRequest, link: string) => (route.pin === undefined ? link : pinLink(link, route.pin));

/** The code of one route: its answer to a request the router has matched and validated. */
export type RouteHandler = (route: RouteRequest) => Promise<Response>;

/** A file the alias maps say must exist: its absence is the origin's fault (502), not the client's. */
export async function mustRead(release: Release, path: string): Promise<OriginObject> {
  const file = await release.origin.read(path);
  if (!file) throw new OriginError(`${path} is missing from the tree at ${release.origin.description}`, 'unavailable');
  return file;
}

/** The answer with a file of the tree as it is. */
export async function fileAnswer(
  route: RouteRequest,
  path: string,
  headers?: Record<string, string>,
): Promise<Response> {
  const file = await mustRead(route.release, path);
  return bodyResponse(route.request, file.body, {
    cacheControl: route.cacheControl,
    headers,
    sha256: file.sha256,
    contentType: contentTypeOf(path),
  });
}

/** What a gene or isoform key in the path names: its canonical id, or the answer to send instead
 * (404, 409), made only when it is sent: the nginx front's admission asks which file a request names
 * without sending a miss's answer, and a 404 may look through older releases. */
export type Resolved = string | { answer: () => Promise<Response> };

/** The gene id a symbol or gene id names, or the answer to send instead: 404, or 409 with the
 * candidates when a symbol is shared by several genes. A 4xx, not 300 Multiple Choices: common clients
 * (requests' raise_for_status, httr2) pass a 3xx on as if it were the gene record. */
export async function resolveGene(route: RouteRequest, key: string): Promise<Resolved> {
  const resolved = await route.release.data.gene(key);
  if (resolved === null) return notFound(route, 'gene', `no gene with symbol or id "${key}" in this release`, key);
  if (Array.isArray(resolved)) {
    const choices = resolved.map((id) => ({ gene_id: id, link: linkFor(route, links.gene(id)) }));
    return {
      answer: async () =>
        problem(route.request, {
          status: 409,
          detail: `symbol "${key}" names ${resolved.length} genes (listed in choices); ask for one of them by gene id`,
          extra: { choices },
        }),
    };
  }
  return resolved;
}

/** The transcript id a transcript id (with or without version) or transcript name names, or the 404
 * to send instead. */
export async function resolveIsoform(route: RouteRequest, key: string): Promise<Resolved> {
  const resolved = await route.release.data.isoform(key);
  return resolved ?? notFound(route, 'isoform', `no isoform with transcript id or name "${key}" in this release`, key);
}

/** A 404 for a gene or isoform that points on: to its current version or the last kept release that
 * holds it (id-history.ts), to search, which finds synonyms, prefixes and typos, and to the release
 * metadata, which says what the release covers (the demo covers one chromosome). */
function notFound(route: RouteRequest, kind: IdKind, what: string, key: string): Resolved {
  return {
    async answer() {
      const went = await whereabouts(route, kind, key, (link) => linkFor(route, link));
      const search = linkFor(route, `${links.search()}?query=${encodeURIComponent(key)}`);
      const release = linkFor(route, links.release());
      return problem(route.request, {
        status: 404,
        detail: `${what}.${went.detail} Search for it (other symbols, prefixes and typos): ${search}; what this release covers: ${release} (coverage).`,
        extra: { ...went.members, search, release },
      });
    },
  };
}
