// How many header fields, and how many bytes of them, a request may carry wherever the API is served.
// The bounds are what CloudFront hands AWS WAF for inspection: at most 200 headers and at most 8 KB
// (8,192 bytes) of header contents ("Oversize web request components in AWS WAF"; WAFV2 API reference:
// Headers, HeaderOrder). A header beyond them is one WAF never sees, so a rate rule aggregating on it
// would omit the request: the CDN blocks such requests before its rate rules (infra/stack.ts), and
// `isoatlas serve` refuses them as well, so that a mirror and the CDN answer the same requests.

export const HEADER_LIMITS = { fields: 200, bytes: 8192 } as const;

/** A header field as sent: its name and value. */
export type HeaderField = readonly [name: string, value: string];

/** UTF-8 bytes of a string (a lone surrogate counted as three, never less than it is on the wire). */
function utf8Bytes(text: string): number {
  let n = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    n += c < 0x80 ? 1 : c < 0x800 ? 2 : 3;
  }
  return n;
}

/** The bytes a header field counts for: its whole HTTP/1.1 line, `name: value` and CRLF, in UTF-8.
 * AWS's documentation says "8 KB of header contents" without saying whether names and separators
 * count; counting every byte of the line counts at least as much as any reading of it, so a request
 * kept within these bounds is one WAF sees whole. */
export function headerFieldBytes(name: string, value: string): number {
  return utf8Bytes(name) + utf8Bytes(value) + 4;
}

/** How far into `fields` (in the order sent) the bounds reach: `whole` fields fit entirely; `room` is
 * what is left of the byte bound for the field after them (0 when the field bound ended it). */
export function withinHeaderLimits(fields: readonly HeaderField[]): { whole: number; room: number } {
  let bytes = 0;
  for (let i = 0; i < fields.length; i++) {
    if (i === HEADER_LIMITS.fields) return { whole: i, room: 0 };
    const next = bytes + headerFieldBytes(fields[i][0], fields[i][1]);
    if (next > HEADER_LIMITS.bytes) return { whole: i, room: HEADER_LIMITS.bytes - bytes };
    bytes = next;
  }
  return { whole: fields.length, room: HEADER_LIMITS.bytes - bytes };
}

/** Does a request with these header fields exceed the bounds? */
export const overHeaderLimits = (fields: readonly HeaderField[]): boolean =>
  withinHeaderLimits(fields).whole < fields.length;

/** What the refusal of such a request says, at the CDN and at the local server alike. */
export const HEADER_LIMITS_DETAIL = `the request's headers must fit in ${HEADER_LIMITS.fields} fields and ${HEADER_LIMITS.bytes} bytes (each field counted as its line: name, colon, space, value and CRLF)`;
