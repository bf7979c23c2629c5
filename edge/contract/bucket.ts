// How a published atlas is laid out in its bucket (or below any base URL): each release under its
// own prefix, and one small pointer object naming the current release. Publishing uploads a release,
// verifies it, then rewrites the pointer in one PUT: readers see the old release or the new one.
//
//   <prefix>current.json                  the pointer (ReleasePointer)
//   <prefix>releases/<release>/<tree path> every file of a rendered tree, manifest.json included

export const POINTER_KEY = 'current.json';

export const releaseKeyPrefix = (release: string) => `releases/${release}/`;

export interface ReleasePointer {
  release: string;
  /** Key prefix of the release's files, relative to the bucket prefix: `releases/<release>/`. */
  prefix: string;
  /** sha256 of the release's manifest.json: what a mirror or the edge can check it against. */
  manifest_sha256: string;
  published_at: string;
  /** The release this one replaced, for `isoatlas rollback`. */
  previous: string | null;
}

export function parsePointer(text: string): ReleasePointer {
  const p = JSON.parse(text) as ReleasePointer;
  if (typeof p.release !== 'string' || typeof p.prefix !== 'string' || !p.prefix.endsWith('/')) throw new Error('not an isoatlas release pointer');
  return p;
}
