// Reads a published tree through any base URL (a CDN, a static file server, a mirror).
import { OriginError, type Origin, type OriginObject } from '../origin.js';

/** A Retry-After header in seconds (RFC 9110 §10.2.3: a number of seconds, or an HTTP date, which
 * counts from `now`); undefined when absent or neither. */
export function retryAfterSeconds(value: string | null, now = Date.now()): number | undefined {
  if (value === null || value.trim() === '') return undefined;
  if (/^\s*\d+\s*$/.test(value)) return Number(value);
  // Date.parse takes almost anything ("1.5" is a date to it): only what names GMT, as HTTP dates do.
  const at = /^[A-Za-z]{3},? .* GMT\s*$/.test(value) ? Date.parse(value) : Number.NaN;
  return Number.isFinite(at) ? Math.max(0, Math.ceil((at - now) / 1000)) : undefined;
}

export class HttpOrigin implements Origin {
  readonly description: string;
  private readonly base: string;

  constructor(
    baseUrl: string,
    private readonly timeoutMs = 5000,
    /** Sent with every request, e.g. a mirror's `Authorization: Bearer <key>`. */
    private readonly headers: Record<string, string> = {},
  ) {
    this.base = baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`;
    this.description = this.base;
  }

  async read(path: string): Promise<OriginObject | null> {
    const res = await this.get(path, {});
    return res && { body: await this.bodyOf(res, path) };
  }

  /** Bytes `start` to `end` (inclusive) of a file: a 206 of exactly that range, or a 200 of the whole
   * file (a server may ignore Range, RFC 9110 §14.2), which is cut. */
  async readRange(path: string, start: number, end: number): Promise<OriginObject | null> {
    const res = await this.get(path, { Range: `bytes=${start}-${end}` });
    if (!res) return null;
    const body = await this.bodyOf(res, path);
    const length = end - start + 1;
    if (res.status === 200 && body.length > end) return { body: body.subarray(start, end + 1) };
    const said = res.headers.get('content-range');
    if (res.status !== 206 || (said !== null && !said.startsWith(`bytes ${start}-${end}/`)) || body.length !== length)
      throw new OriginError(
        `${this.base}${path}: asked for bytes ${start}-${end}, got ${res.status} with ${body.length} bytes${said ? ` (Content-Range: ${said})` : ''}`,
        'unavailable',
      );
    return { body };
  }

  /** The answer's status line and headers, or null for a file that is not there. */
  private async get(path: string, headers: Record<string, string>): Promise<Response | null> {
    let res: Response;
    try {
      res = await fetch(new URL(path, this.base), {
        headers: { ...this.headers, ...headers },
        signal: AbortSignal.timeout(this.timeoutMs),
      });
    } catch (err) {
      const timedOut = (err as Error).name === 'TimeoutError';
      // fetch says only "fetch failed"; why (ECONNREFUSED, ENOTFOUND, a TLS error) is in its cause.
      const cause = (err as Error & { cause?: { code?: string; message?: string } }).cause;
      const why = cause ? ` (${cause.code ?? cause.message})` : '';
      throw new OriginError(
        `${this.base}${path}: ${timedOut ? `no answer within ${this.timeoutMs} ms` : `${(err as Error).message}${why}`}`,
        timedOut ? 'timeout' : 'unavailable',
        undefined,
        timedOut ? undefined : cause?.code,
      );
    }
    // S3 answers 403 for a missing key when listing is not allowed.
    if (res.status === 404 || res.status === 403) {
      await res.body?.cancel().catch(() => {});
      return null;
    }
    if (!res.ok) {
      await res.body?.cancel().catch(() => {});
      const overloaded = res.status === 503 || res.status === 429;
      throw new OriginError(
        `${this.base}${path}: origin answered ${res.status}`,
        overloaded ? 'overloaded' : 'unavailable',
        retryAfterSeconds(res.headers.get('retry-after')),
        undefined,
        res.status,
      );
    }
    return res;
  }

  private async bodyOf(res: Response, path: string): Promise<Uint8Array> {
    try {
      return new Uint8Array(await res.arrayBuffer());
    } catch (err) {
      // The body can fail after the status line: cut off (reset) or too slow (the same time budget).
      const timedOut = (err as Error).name === 'TimeoutError';
      throw new OriginError(
        `${this.base}${path}: body ${timedOut ? `not received within ${this.timeoutMs} ms` : `cut off (${(err as Error).message})`}`,
        timedOut ? 'timeout' : 'unavailable',
      );
    }
  }
}
