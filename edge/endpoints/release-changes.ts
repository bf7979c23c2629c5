// GET /api/v1/releases/{release}/changes?since=&limit=&offset=: every gene and isoform added, removed
// or changed in a kept release, relative to the release it follows in the store's history or to an
// older kept one (edge/release-changes.ts compares their manifests). The list of a pair of releases
// is computed once and kept; a page reads only the records it names (for their symbols and names).
import { links, pinLink } from '../contract/tree.js';
import type { ChangedRecordBody, ReleaseChangesBody, ReleaseListBody } from '../contract/schemas.js';
import { LoadingCache } from '../loading-cache.js';
import { OriginError } from '../origin.js';
import { changesBetween, recordPath, type RecordChange } from '../release-changes.js';
import { bodyResponse, jsonBody, problem } from '../responses.js';
import { RequestProblem } from '../router.js';
import { clip } from '../access/redaction.js';
import { mustRead, type Release, type RouteHandler, type RouteRequest } from './route-request.js';

/** Lists of changes kept, by the two manifests they compare: a few lists of a large change. */
const lists = new LoadingCache<RecordChange[]>(8 * 1024 * 1024);
/** What one listed change weighs in memory, about. */
const CHANGE_WEIGHT = 160;

export const changes: RouteHandler = async (route) => {
  const name = route.params.release;
  const since = route.query.strings.since;
  const listed = await route.releases.list();
  // A tree served as it is lists itself with no manifest of a store: there is no history to compare.
  if (listed.releases.every((r) => r.manifest_sha256 === null))
    return problem(route.request, {
      status: 404,
      detail: `this server holds one release (${listed.current}), a rendered tree, not a published store: changes between releases need a store's history (serve a mirror of a published store, or the store itself)`,
    });
  const from = pairOf(listed, name, since, route);
  if (typeof from !== 'string') return from;
  const [before, after] = await Promise.all([keptRelease(route, from), keptRelease(route, name)]);
  const all = await changeList(before, after);
  const { limit, offset } = route.query.integers;
  const items = await Promise.all(
    all.slice(offset, offset + limit).map((c) => itemOf(c, { release: before, name: from }, { release: after, name })),
  );
  const next = offset + limit < all.length ? links.changes(name, { since: from, limit, offset: offset + limit }) : null;
  const body: ReleaseChangesBody = { release: name, since: from, total: all.length, limit, offset, next, items };
  return bodyResponse(route.request, jsonBody(body), {
    cacheControl: route.cacheControl,
    headers: next ? { Link: `<${next}>; rel="next"` } : undefined,
  });
};

/** The release the changes are relative to, or the 4xx that says why the pair cannot be compared. */
function pairOf(
  listed: ReleaseListBody,
  name: string,
  since: string | undefined,
  route: RouteRequest,
): string | Response {
  const kept = listed.releases.map((r) => r.release);
  const at = kept.indexOf(name);
  const list = `GET ${links.releases()} lists the releases this atlas keeps`;
  if (at < 0)
    return problem(route.request, { status: 404, detail: `no release "${clip(name, 100)}" is kept here; ${list}` });
  if (since === undefined) {
    if (at === 0)
      return problem(route.request, {
        status: 404,
        detail: `${name} is the oldest release this atlas keeps: it follows none here, so there is nothing to compare it with; ${list}`,
      });
    return kept[at - 1];
  }
  const from = kept.indexOf(since);
  if (since === name)
    throw new RequestProblem(400, `"since" names ${name} itself; give an older release than ${name}`, 'since');
  if (from < 0)
    throw new RequestProblem(
      400,
      `"since" must name a release this atlas keeps; "${clip(since, 100)}" is not one (${list})`,
      'since',
    );
  if (from > at)
    throw new RequestProblem(
      400,
      `"since" names ${since}, which was published after ${name}; give an older release, or ask for the changes of ${since} since ${name}`,
      'since',
    );
  return since;
}

/** A release the history lists: its absence is the store's fault (it changed under the request). */
async function keptRelease(route: RouteRequest, name: string): Promise<Release> {
  const release = await route.releases.get(name);
  if (!release) throw new OriginError(`release ${name} is listed in the history but cannot be read`, 'unavailable');
  return release;
}

async function changeList(before: Release, after: Release): Promise<RecordChange[]> {
  const [a, b] = await Promise.all([before.origin.manifestSha256(), after.origin.manifestSha256()]);
  return lists.get(`${a}>${b}`, async () => {
    const value = await changesBetween(before.origin, after.origin);
    return { value, weight: 64 + value.length * CHANGE_WEIGHT };
  });
}

interface Side {
  release: Release;
  name: string;
}

/** A change as the list shows it: its symbol and name from its record (in `after`, or in `before`
 * when it was removed), and its links into both releases. */
async function itemOf(change: RecordChange, before: Side, after: Side): Promise<ChangedRecordBody> {
  const link = change.type === 'gene' ? links.gene(change.id) : links.isoform(change.id);
  const there = (side: Side, present: boolean) => (present ? pinLink(link, side.name) : null);
  const source = change.change === 'removed' ? before : after;
  const file = await mustRead(source.release, recordPath(change.type, change.id));
  const record = JSON.parse(new TextDecoder().decode(file.body)) as Record<string, unknown>;
  const [symbol, name] =
    change.type === 'gene' ? [record.symbol, record.name] : [record.gene_symbol, record.transcript_name];
  return {
    type: change.type,
    id: change.id,
    symbol: String(symbol),
    name: typeof name === 'string' ? name : null,
    change: change.change,
    parts: change.parts,
    links: { since: there(before, change.change !== 'added'), release: there(after, change.change !== 'removed') },
  };
}
