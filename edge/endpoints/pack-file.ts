// A pack of a mirror's store (edge/contract/packs.ts), for other mirrors: streamed from the objects the
// mirror holds (edge/origins/store-packs.ts), whole or one byte range of it (RFC 9110 §14), so what an
// answer holds does not grow with the pack. The pack's sha256 is its strong ETag, so a range and the
// whole share it, as RFC 9110 §14.2 asks. HEAD reads no object.
import { packKey } from '../contract/packs.js';
import { CORS_HEADERS, etagMatches, problem } from '../responses.js';
import { ObjectNotHeld, type StorePacks } from '../origins/store-packs.js';

const IMMUTABLE = 'public, max-age=31536000, immutable';

/** The one range a Range header asks of `size` bytes, as [start, end]; 'whole' when the header is
 * absent, not of bytes, malformed or asks for several ranges (RFC 9110 §14.2 lets a server answer
 * those with the whole representation); 'unsatisfiable' when it starts at or past the end (RFC 9110
 * §14.1.1: a first position not below the length), or is a suffix of none. */
export function askedRange(header: string | null, size: number): [number, number] | 'whole' | 'unsatisfiable' {
  if (header === null) return 'whole';
  const m = /^bytes=(\d*)-(\d*)$/i.exec(header.trim());
  if (!m || (m[1] === '' && m[2] === '')) return 'whole';
  if (m[1] === '') {
    // A suffix: the last n bytes.
    const n = Number(m[2]);
    if (!Number.isSafeInteger(n)) return 'whole';
    return n === 0 || size === 0 ? 'unsatisfiable' : [Math.max(0, size - n), size - 1];
  }
  const start = Number(m[1]);
  const last = m[2] === '' ? Number.MAX_SAFE_INTEGER : Number(m[2]);
  if (!Number.isSafeInteger(start) || !Number.isSafeInteger(last) || last < start) return 'whole';
  return start >= size ? 'unsatisfiable' : [start, Math.min(last, size - 1)];
}

export async function packFile(request: Request, packs: StorePacks, sha: string): Promise<Response> {
  const key = packKey(sha);
  const index = await packs.index(sha);
  if (!index) return problem(request, { status: 404, detail: `no ${key} in this mirror` });
  const size = index.pack.size;
  const etag = `"${sha}"`;
  const ifRange = request.headers.get('if-range');
  // A Range under an If-Range naming another representation is ignored: the whole pack is sent.
  const range = ifRange === null || ifRange === etag ? askedRange(request.headers.get('range'), size) : 'whole';
  const head = new Headers({ ...CORS_HEADERS, ETag: etag, 'Cache-Control': IMMUTABLE, 'Accept-Ranges': 'bytes' });
  if (range === 'unsatisfiable')
    return problem(request, {
      status: 416,
      detail: `${key} has ${size} bytes; ask for a range that starts before its end (Range: bytes=0-${Math.max(size - 1, 0)})`,
      headers: { 'Content-Range': `bytes */${size}`, 'Accept-Ranges': 'bytes' },
    });
  const whole = range === 'whole' || (range[0] === 0 && range[1] === size - 1);
  if (whole && etagMatches(request.headers.get('if-none-match'), etag))
    return new Response(null, { status: 304, headers: head });
  const [start, end] = whole ? [0, size - 1] : range;
  // Known before the answer starts, so that its status can say it; HEAD is answered as GET would be.
  const notHeld = await packs.missing(index, start, end);
  if (notHeld) return notHeldProblem(request, key, start, end, notHeld);
  head.set('Content-Type', 'application/octet-stream');
  head.set('Content-Length', String(end - start + 1));
  if (!whole) head.set('Content-Range', `bytes ${start}-${end}/${size}`);
  const status = whole ? 200 : 206;
  if (request.method === 'HEAD' || size === 0) return new Response(null, { status, headers: head });
  let body: ReadableStream<Uint8Array>;
  try {
    body = await packs.stream(index, start, end);
  } catch (err) {
    // Gone since it was checked (a gc meanwhile), or a store that cannot tell sizes.
    if (!(err instanceof ObjectNotHeld)) throw err;
    return notHeldProblem(request, key, start, end, err);
  }
  return new Response(body, { status, headers: head });
}

/** 404: the mirror holds the pack's index but not every object of this range (see ObjectNotHeld). */
function notHeldProblem(request: Request, key: string, start: number, end: number, err: ObjectNotHeld): Response {
  return problem(request, {
    status: 404,
    detail: `${key} bytes ${start}-${end} cover object ${err.sha256}, which this mirror does not hold: ask for the ranges of the objects you want, or for those objects on their own`,
    headers: { 'Accept-Ranges': 'bytes' },
  });
}
