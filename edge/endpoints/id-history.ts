// Where an id went: what the 404 for a gene or isoform the asked release lacks says besides "not
// here". An Ensembl id asked with another version than the release's names the current version, as
// Ensembl's archive answers (`latest`, `is_current`) rather than serving another version in its
// place; an id that an older kept release holds names the newest such release, and links to the
// record there. Only releases the store keeps (its history) and older than the one asked are looked
// in, newest first, one alias shard each, stopping at the first that holds the id; a single tree has
// no history, and its 404 says only what it said before.
import { links, treePaths } from '../contract/tree.js';
import { RELEASE_PARAM } from '../contract/routes.js';
import type { Release, RouteRequest } from './route-request.js';

export type IdKind = 'gene' | 'isoform';

/** What the 404 adds: sentences for its detail, and members (RFC 9457 extension members). */
export interface Whereabouts {
  detail: string;
  members: Record<string, string>;
}

/** An Ensembl stable id with its version (ENSG…/ENST… of any species prefix): its unversioned id. A
 * long-read id (PB.x.y) has no version: its last part numbers the isoform within its locus. */
const VERSIONED_ENSEMBL_ID = /^(ENS[A-Z]*[GT]\d+)\.\d+$/i;

export async function whereabouts(
  route: RouteRequest,
  kind: IdKind,
  key: string,
  linkFor: (link: string) => string,
): Promise<Whereabouts> {
  const [current, last] = await Promise.all([currentVersion(route.release, kind, key), lastRelease(route, kind, key)]);
  const sentences: string[] = [];
  const members: Record<string, string> = {};
  if (current) {
    members.current_id = current.id;
    members.current_link = linkFor(current.link);
    sentences.push(`Its current version in this release is ${current.id} (${members.current_link})`);
  }
  if (last) {
    members.last_release = last.release;
    members.last_release_link = last.link;
    sentences.push(
      `Release ${last.release}, the newest kept release before this one to hold it, has it (${last.link})`,
    );
  }
  return { detail: sentences.map((s) => ` ${s}.`).join(''), members };
}

/** The id a versioned Ensembl id names in this release under another version, and its link; null
 * when the key is not a versioned Ensembl id, or the release has no other version of it. */
async function currentVersion(
  release: Release,
  kind: IdKind,
  key: string,
): Promise<{ id: string; link: string } | null> {
  const unversioned = VERSIONED_ENSEMBL_ID.exec(key)?.[1];
  if (unversioned === undefined) return null;
  if (kind === 'isoform') {
    const id = await release.data.isoform(unversioned);
    return id === null || id.toLowerCase() === key.toLowerCase() ? null : { id, link: links.isoform(id) };
  }
  const gene = await release.data.gene(unversioned);
  if (typeof gene !== 'string') return null;
  // Gene files are named by the unversioned id: the version is in the record. (A record the alias map
  // names but the tree lacks is the origin's fault, which the gene's own route reports.)
  const file = await release.origin.read(treePaths.gene(gene));
  if (!file) return null;
  const versioned = (JSON.parse(new TextDecoder().decode(file.body)) as { gene_id_versioned: string | null })
    .gene_id_versioned;
  return versioned === null || versioned.toLowerCase() === key.toLowerCase()
    ? null
    : { id: versioned, link: links.gene(gene) };
}

/** How many kept releases before the one asked a 404 looks in: a bound on what one request for an id
 * that never existed (a typo) costs, however many releases a store keeps; as many as stay open for
 * lookups (edge/handler.ts), so one walk never reopens a release it opened. */
export const HISTORY_DEPTH = 8;

/** The newest kept release older than the one asked, among the HISTORY_DEPTH before it, whose alias
 * map knows the key, and the link to what it names there (a symbol several genes shared then: the
 * link answers with the choices). */
export async function lastRelease(
  route: RouteRequest,
  kind: IdKind,
  key: string,
): Promise<{ release: string; link: string } | null> {
  const asked = await route.release.name();
  const { releases } = await route.releases.list();
  const at = releases.findIndex((r) => r.release === asked);
  for (let i = at - 1; i >= Math.max(0, at - HISTORY_DEPTH); i--) {
    const name = releases[i].release;
    const older = await route.releases.lookup(name);
    if (!older) continue;
    const query = { [RELEASE_PARAM]: name };
    if (kind === 'isoform') {
      const id = await older.data.isoform(key);
      if (id !== null) return { release: name, link: links.isoform(id, query) };
    } else {
      const id = await older.data.gene(key);
      if (id !== null) return { release: name, link: links.gene(typeof id === 'string' ? id : key, query) };
    }
  }
  return null;
}
