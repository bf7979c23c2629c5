// The Node server's compression step (`isoatlas serve`), around the Web-standard handler: it answers
// each GET or HEAD for a compressible body with the coding the client accepts best (edge/compression.ts),
// compressed once per body and coding and kept in a bounded cache beside the verified files. The
// handler answers for the identity body; which representation goes out, its ETag and whether the
// client already holds it (If-None-Match) are decided here. Lambda@Edge does without: CloudFront
// compresses itself (infra/stack.ts).
import { promisify } from 'node:util';
import zlib from 'node:zlib';
import type { Handler } from '../handler.js';
import { LoadingCache } from '../loading-cache.js';
import { etagMatches } from '../responses.js';
import { isCompressible, MIN_COMPRESSED_BYTES, negotiate, representationTag, type Coding } from '../compression.js';

const brotli = promisify(zlib.brotliCompress);
const gzip = promisify(zlib.gzip);

/** Each coding's settings: the levels are chosen in BENCHMARKS.md (compression), where the last few
 * percent cost tens of times the CPU. The same body with the same zlib always gives the same bytes, so
 * the server's copy and the nginx front's precompressed file are one representation. */
const options = (coding: Coding, body: Uint8Array): zlib.ZlibOptions & zlib.BrotliOptions =>
  coding === 'gzip'
    ? { level: 6 }
    : { params: { [zlib.constants.BROTLI_PARAM_QUALITY]: 6, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: body.length } };

/** A body in a coding, on libuv's threads (the server's event loop keeps answering meanwhile). */
export function compressBody(body: Uint8Array, coding: Coding): Promise<Uint8Array> {
  return coding === 'gzip' ? gzip(body, options(coding, body)) : brotli(body, options(coding, body));
}

/** The same, at once: for tens of thousands of small files (nginx-config) the thread hand-off costs
 * more than the compressing. */
export function compressBodySync(body: Uint8Array, coding: Coding): Uint8Array {
  return coding === 'gzip'
    ? zlib.gzipSync(body, options(coding, body))
    : zlib.brotliCompressSync(body, options(coding, body));
}

const STRONG_SHA = /^"([0-9a-f]{64})"$/;

export function withCompression(handler: Handler, cacheBytes: number): Handler {
  const compressed = new LoadingCache<Uint8Array>(cacheBytes);
  return async (request, context) => {
    if (request.method !== 'GET' && request.method !== 'HEAD') return handler(request, context);
    // Asked as a plain GET: the handler's 304 and HEAD would be about the identity body. A plain GET
    // already is one, and is passed as it is (most requests: a second Request costs as much as
    // reading a small file).
    const head = request.method === 'HEAD';
    const plain = !head && !request.headers.has('if-none-match');
    const headers = plain ? request.headers : new Headers(request.headers);
    if (!plain) headers.delete('if-none-match');
    const response = await handler(plain ? request : new Request(request.url, { method: 'GET', headers }), context);
    const sha = STRONG_SHA.exec(response.headers.get('etag') ?? '')?.[1];
    if (response.status !== 200 || sha === undefined) {
      return head && response.body
        ? new Response(null, { status: response.status, headers: response.headers })
        : response;
    }
    // The handler's own answer, whose head becomes the representation's (it is not sent as it is).
    const out = response.headers;
    const compressible = isCompressible(out.get('content-type'));
    // Every answer of a compressible type varies, the identity ones too, so caches keep them apart.
    if (compressible) out.append('vary', 'Accept-Encoding');
    // The handler's answers name their length; the body is read only when it is to be compressed, so
    // an identity answer costs no second copy of it.
    const length = Number(out.get('content-length') ?? MIN_COMPRESSED_BYTES);
    const coding =
      compressible && length >= MIN_COMPRESSED_BYTES ? negotiate(request.headers.get('accept-encoding')) : null;
    const etag = representationTag(sha, coding);
    out.set('etag', etag);
    if (etagMatches(request.headers.get('if-none-match'), etag)) {
      await response.body?.cancel();
      out.delete('content-type');
      out.delete('content-length');
      return new Response(null, { status: 304, headers: out });
    }
    if (coding === null) {
      if (!head) return response;
      await response.body?.cancel();
      return new Response(null, { status: 200, headers: out });
    }
    let read = false;
    const bytes = await compressed.get(`${sha} ${coding}`, async () => {
      read = true;
      const value = await compressBody(new Uint8Array(await response.arrayBuffer()), coding);
      return { value, weight: value.length + 128 };
    });
    if (!read) await response.body?.cancel();
    out.set('content-encoding', coding);
    out.set('content-length', String(bytes.length));
    return new Response(head ? null : (bytes as Uint8Array<ArrayBuffer>), { status: 200, headers: out });
  };
}
