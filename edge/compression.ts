// Content codings of an answer: which one a request accepts, which answers get one, and how each
// representation is named. Shared by the Node server's compression step (adapters/compress.ts) and
// the nginx front's config (edge/server/nginx-config.ts), so both answer alike. Web-standard only; the
// compressing itself is Node's (the CDN compresses at the edge).

/** The codings offered, best first: brotli is smaller for the same time (BENCHMARKS.md). */
export const CODINGS = ['br', 'gzip'] as const;
export type Coding = (typeof CODINGS)[number];

/** The file suffix of each coding's precompressed copy (nginx front). */
export const CODING_SUFFIX: Record<Coding, string> = { br: '.br', gzip: '.gz' };

/** Bodies below this many bytes stay identity: the coding's own framing and the extra header fields
 * eat most of what it would save (BENCHMARKS.md, compression). */
export const MIN_COMPRESSED_BYTES = 256;

/** Content types worth compressing: the tree's JSON, mmCIF and docs assets. Problem answers and a
 * store's objects (already what a mirror hashes) stay identity. */
export function isCompressible(contentType: string | null): boolean {
  if (contentType === null) return false;
  const type = contentType.split(';')[0].trim().toLowerCase();
  return type === 'application/json' || type === 'chemical/x-mmcif' || type.startsWith('text/');
}

/** The coding to answer with for an Accept-Encoding value (RFC 9110 §12.5.3): the accepted one with
 * the highest q-value, brotli on a tie; `*` stands for any coding not named; null (identity) when the
 * header is absent or accepts neither. */
export function negotiate(acceptEncoding: string | null): Coding | null {
  if (acceptEncoding === null) return null;
  const q = new Map<string, number>();
  for (const part of acceptEncoding.split(',')) {
    const [name, ...params] = part.split(';').map((s) => s.trim().toLowerCase());
    if (!name) continue;
    let weight = 1;
    for (const p of params) {
      const m = /^q\s*=\s*([01](?:\.\d{0,3})?)$/.exec(p);
      if (m) weight = Math.min(1, Number(m[1]));
    }
    // x-gzip is gzip (RFC 9110 §8.4.1.3).
    q.set(name === 'x-gzip' ? 'gzip' : name, weight);
  }
  let best: Coding | null = null;
  let bestQ = 0;
  for (const coding of CODINGS) {
    const weight = q.get(coding) ?? q.get('*') ?? 0;
    if (weight > bestQ) [best, bestQ] = [coding, weight];
  }
  return best;
}

/** The entity tag of a representation of a body whose sha256 is `sha256`. Identity keeps the strong
 * tag of its exact bytes; a compressed copy gets a weak tag of its own (RFC 9110 §8.8.3): its bytes
 * depend on the compression library's version, not only on the body, and If-None-Match compares
 * weakly, so a client revalidating its copy still gets a 304. */
export function representationTag(sha256: string, coding: Coding | null): string {
  return coding === null ? `"${sha256}"` : `W/"${sha256}-${coding}"`;
}
