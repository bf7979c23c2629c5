// What the nginx front (nginx-config.ts) writes of a request target, in its log lines and in its
// problem bodies' `instance`. nginx can match a target against a pattern but cannot decode it as the
// server does, nor know which secrets were issued, so:
// - the key prefix is spelled here in every way the server's redaction reads it (redactKeys, in
//   edge/access/redaction.ts, is asked, one spelling at a time), for nginx's raw `$request`;
// - a target is written only when it cannot hold a piece of a secret (SAFE_TARGET); otherwise the
//   route it names, as the route table spells it, or nothing.
import { KEY_PREFIX } from '../access/key-format.js';
import { redactKeys } from '../access/redaction.js';
import { routes } from '../contract/routes.js';
import { API_PREFIX } from '../contract/tree.js';

/** What follows the prefix in each probe: an id and one character of a secret, the least the server
 * reads as the start of a key once the prefix is its own. */
const AFTER_PREFIX = 'abcdefgh_x';
/** How many `25`s (the `%` encoded again) a probe tries: a spelling read at every depth up to this
 * one is taken to be read at any depth, as `(?:25)*`. */
const DEPTHS = 3;

/** Does the server redact `text` as (the start of) a key? Its redaction removes the id with it. */
const readAsKey = (text: string) => !redactKeys(text).includes(AFTER_PREFIX);

/** `hex` with each of its letters in either case: `6f` → `6f`, `6F`. */
function hexCases(hex: string): string[] {
  return [...hex].reduce<string[]>(
    (spellings, digit) =>
      spellings.flatMap((s) => [...new Set([digit.toLowerCase(), digit.toUpperCase()])].map((d) => s + d)),
    [''],
  );
}

const escapeRegex = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** The key prefix as a regular expression (the same in JavaScript and nginx's PCRE) matching each
 * spelling of each of its characters that the server reads as that character: as itself, in the other
 * letter case, or percent-encoded in either hex case, once or more. Derived by asking redactKeys,
 * so the front follows the server's reading when it changes. */
export function keyPrefixPattern(): string {
  const probe = (at: number, spelled: string) =>
    readAsKey(KEY_PREFIX.slice(0, at) + spelled + KEY_PREFIX.slice(at + 1) + AFTER_PREFIX);
  // What the probes stand on: the prefix is read as a key, and a prefix one character off is not.
  if (!probe(0, KEY_PREFIX[0]) || probe(0, '.'))
    throw new Error(
      'redactKeys no longer tells a key prefix from another text the way edge/server/nginx-redaction.ts probes it: update keyPrefixPattern',
    );
  return [...KEY_PREFIX]
    .map((c, at) => {
      const cases = [...new Set([c, c.toLowerCase(), c.toUpperCase()])];
      const raw = cases.filter((v) => probe(at, v)).map(escapeRegex);
      const encoded = cases.flatMap((v) =>
        hexCases(v.charCodeAt(0).toString(16).padStart(2, '0')).flatMap((hex) => {
          const depths = Array.from({ length: DEPTHS + 1 }, (_, k) => k).filter((k) =>
            probe(at, `%${'25'.repeat(k)}${hex}`),
          );
          if (depths.length === DEPTHS + 1) return [`%(?:25)*${hex}`];
          return depths.map((k) => `%${'25'.repeat(k)}${hex}`);
        }),
      );
      return `(?:${[...raw, ...encoded].join('|')})`;
    })
    .join('');
}

/** Characters in a row that a line or an answer may carry of a secret: a shorter run cannot be a
 * recognizable piece of one. */
export const SECRET_RUN = 8;
/** A run of the secrets' alphabet (base64url) shorter than SECRET_RUN. */
const SHORT_RUN = `[A-Za-z0-9_-]{0,${SECRET_RUN - 1}}`;
/** A target that cannot hold a piece of a key or secret, spelled or encoded in any way: an absolute
 * path (and query) of short runs of the secrets' alphabet between separators outside it, and no `%`. */
export const SAFE_TARGET = `/(?:${SHORT_RUN}[/.~?&=])*${SHORT_RUN}`;

/** Each route of the route table as a pattern over a raw target (a parameter: any segment; a
 * trailing slash; a query), with the route's path as the table spells it (`/api/v1/genes/{symbol}`). */
export function routeShapes(): { pattern: string; route: string }[] {
  return routes.map(({ path }) => {
    const route = `${API_PREFIX}${path}`;
    const pattern = escapeRegex(route.replace(/\/$/, '')).replace(/\\\{[^}]+\\\}/g, '[^/?\\s]+');
    return { pattern: `${pattern}/?(?:\\?\\S*)?`, route };
  });
}
