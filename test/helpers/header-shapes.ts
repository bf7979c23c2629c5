// Requests that carry a key among other headers, each just within or just past one of the bounds on
// header fields (edge/contract/header-limits.ts: what CloudFront hands WAF), the key before or after
// the rest: the same shapes go to the CDN's gate and WAF rules (key-spelling.test.ts), to a real
// `isoatlas serve` (header-limits.test.ts) and, two of them, to every entry of the dispatch table
// (adversary.ts).
import { HEADER_LIMITS, type HeaderField, headerFieldBytes } from '../../edge/contract/header-limits.js';

/** `count` filler fields of `valueBytes` each, named apart. */
export function filler(count: number, valueBytes: number, tag = 'x-filler'): HeaderField[] {
  return Array.from({ length: count }, (_, i) => [`${tag}-${String(i).padStart(3, '0')}`, 'f'.repeat(valueBytes)]);
}

/** The bytes `fields` count for, in all. */
export const fieldBytes = (fields: readonly HeaderField[]): number =>
  fields.reduce((n, [name, value]) => n + headerFieldBytes(name, value), 0);

/** The one field that brings `others` to `total` bytes. */
function paddingTo(total: number, others: readonly HeaderField[]): HeaderField {
  const name = 'x-padding';
  const value = total - fieldBytes(others) - headerFieldBytes(name, '');
  if (value < 0) throw new Error(`the other fields are already over ${total} bytes`);
  return [name, 'p'.repeat(value)];
}

export interface HeaderShape {
  label: string;
  /** In the order sent. */
  fields: HeaderField[];
  /** Past a bound. */
  over: boolean;
}

/** The shapes, every one beginning with `first` (Host, and whatever else each client always sends)
 * and carrying `Authorization: <authorization>` once. */
export function headerShapes(first: readonly HeaderField[], authorization: string): HeaderShape[] {
  const { fields: most, bytes } = HEADER_LIMITS;
  const auth: HeaderField = ['authorization', authorization];
  const withKey = [...first, auth];
  // The bytes of the key's field up to its id's underscore and ten characters of the secret.
  const idEnd = authorization.indexOf('_', authorization.indexOf('isoatlas_') + 'isoatlas_'.length) + 1;
  const cutKey = headerFieldBytes('authorization', authorization.slice(0, idEnd + 10));
  return [
    { label: 'no other header', fields: withKey, over: false },
    {
      label: "8 KiB of filler before the key (the issue's request)",
      fields: [...first, ...filler(8, 1024), auth],
      over: true,
    },
    {
      label: 'filler before the key, all within the byte bound',
      fields: [...first, paddingTo(bytes, withKey), auth],
      over: false,
    },
    {
      label: 'filler before the key, one byte past the byte bound',
      fields: [...first, paddingTo(bytes + 1, withKey), auth],
      over: true,
    },
    {
      label: 'filler after the key, all within the byte bound',
      fields: [...withKey, paddingTo(bytes, withKey)],
      over: false,
    },
    {
      label: 'filler after the key, one byte past the byte bound',
      fields: [...withKey, paddingTo(bytes + 1, withKey)],
      over: true,
    },
    {
      label: 'as many fields as the bound, the key last',
      fields: [...first, ...filler(most - withKey.length, 1), auth],
      over: false,
    },
    {
      label: 'one field more than the bound, the key last',
      fields: [...first, ...filler(most + 1 - withKey.length, 1), auth],
      over: true,
    },
    {
      label: 'one field more than the bound, the key first',
      fields: [...withKey, ...filler(most + 1 - withKey.length, 1)],
      over: true,
    },
    {
      label: 'few large fields: two of 4,500 bytes before the key',
      fields: [...first, ...filler(2, 4500), auth],
      over: true,
    },
    {
      label: 'one field alone past the byte bound, after the key',
      fields: [...withKey, ...filler(1, bytes)],
      over: true,
    },
    {
      label: 'the byte bound inside the key, past its id',
      fields: [...first, paddingTo(bytes - cutKey, first), auth],
      over: true,
    },
  ];
}

/** A request's head as sent on the wire: the request line, each field as `name: value`, a blank line. */
export const rawHead = (requestLine: string, fields: readonly HeaderField[]): string =>
  `${requestLine}\r\n${fields.map(([name, value]) => `${name}: ${value}\r\n`).join('')}\r\n`;
