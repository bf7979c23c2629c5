// How a careless user pastes a key (edge/access/redaction.ts must keep every piece of its secret out
// of logs and answers): whole or in part, with stray characters inserted, upper-cased, percent-encoded
// in either hex case or twice, in a path, a query or a log line. Shared by the rule's test with many
// keys (redaction.test.ts) and the test against a real server (keys-logs.test.ts).

import { Rng } from '../../build/generate/random.js';
import { ID_ALPHABET } from '../../edge/access/config.js';
import { KEY_PREFIX, RANDOM_ID_LENGTH } from '../../edge/access/key-format.js';

/** Characters a paste may put inside a key, as a request target carries them. */
export const STRAYS = ['.', '%20', '+', '%2B', '%2e', '%0A', '%0D%0A', '&', '=', '%09'] as const;

export interface Pasted {
  /** The text that holds the secret, in the place a client would put it. */
  text: string;
  /** The secret as it appears there (upper-cased if the key was). */
  secret: string;
}

/** A key's parts: `isoatlas_<id>_<secret>`. */
export function partsOf(key: string): { id: string; secret: string } {
  const [, id, secret] = /^isoatlas_([a-z2-7]+)_(.+)$/.exec(key)!;
  return { id, secret };
}

/** `text` with `count` stray characters at distinct places inside it (never at either end). */
export function withStrays(text: string, count: number, random: () => number): string {
  const at = new Set<number>();
  while (at.size < count) at.add(1 + Math.floor(random() * (text.length - 1)));
  let out = text;
  for (const i of [...at].sort((a, b) => b - a))
    out = out.slice(0, i) + STRAYS[Math.floor(random() * STRAYS.length)] + out.slice(i);
  return out;
}

/** Each character of `text` percent-encoded, hex in either case at random (`%25` first: twice). */
const encodedEach = (text: string, random: () => number, prefix = '%') =>
  [...text].map((c) => {
    const hex = c.charCodeAt(0).toString(16);
    return `${prefix}${random() < 0.5 ? hex : hex.toUpperCase()}`;
  });

type Paste = (key: string, random: () => number) => Pasted;

/** Each shape as a request target (path and query) holding the key: none leaves a piece of the
 * secret but by odds below one in ten million (SECURITY.md, "Redaction"). */
export const PASTE_SHAPES: Record<string, Paste> = {
  'the key in a path': (key) => ({ text: `/api/v1/genes/${key}`, secret: partsOf(key).secret }),
  'the key in a query': (key) => ({ text: `/api/v1/search?query=${key}&limit=5`, secret: partsOf(key).secret }),
  'the key with a stray character': (key, random) => ({
    text: `/api/v1/genes/${withStrays(key, 1, random)}`,
    secret: partsOf(key).secret,
  }),
  'the key without its prefix': (key) => {
    const { id, secret } = partsOf(key);
    return { text: `/api/v1/genes/${id}_${secret}`, secret };
  },
  'the secret alone': (key) => ({ text: `/api/v1/genes/${partsOf(key).secret}`, secret: partsOf(key).secret }),
  'the secret with a stray character': (key, random) => {
    const { secret } = partsOf(key);
    return { text: `/api/v1/search?query=${withStrays(secret, 1, random)}&limit=5`, secret };
  },
  'the secret split across two query parameters': (key, random) => {
    const { secret } = partsOf(key);
    const cut = 1 + Math.floor(random() * (secret.length - 1));
    return { text: `/api/v1/search?query=${secret.slice(0, cut)}&limit=${secret.slice(cut)}`, secret };
  },
  'the key upper-cased': (key, random) => ({
    text: `/api/v1/genes/${withStrays(key.toUpperCase(), 1, random)}`,
    secret: partsOf(key).secret.toUpperCase(),
  }),
  'the secret upper-cased': (key) => {
    const secret = partsOf(key).secret.toUpperCase();
    return { text: `/api/v1/genes/${secret}`, secret };
  },
  'the key percent-encoded, hex in either case': (key, random) => ({
    text: `/api/v1/genes/${encodedEach(key, random).join('')}`,
    secret: partsOf(key).secret,
  }),
  'the key encoded twice': (key, random) => ({
    text: `/api/v1/search?query=${encodedEach(key, random, '%25').join('')}`,
    secret: partsOf(key).secret,
  }),
  'the secret percent-encoded with a stray character': (key, random) => {
    const { secret } = partsOf(key);
    const encoded = encodedEach(secret, random);
    encoded.splice(1 + Math.floor(random() * (encoded.length - 1)), 0, STRAYS[Math.floor(random() * STRAYS.length)]);
    return { text: `/api/v1/genes/${encoded.join('')}`, secret };
  },
};

/** Shapes whose odds of leaving a piece are stated rather than negligible: two stray characters, the
 * prefix perhaps among what they cut. */
export const PASTE_SHAPES_BY_CHANCE: Record<string, Paste> = {
  'the key with two stray characters': (key, random) => ({
    text: `/api/v1/search?query=${withStrays(key, 2, random)}`,
    secret: partsOf(key).secret,
  }),
  'the secret with two stray characters': (key, random) => {
    const { secret } = partsOf(key);
    return { text: `/api/v1/genes/${withStrays(secret, 2, random)}`, secret };
  },
};

/** Keys and every random choice of a paste from one seed: a run that finds a leak finds it again,
 * on the same key, and a rare shape's odds are not a chance of a failing run. */
export function seededPastes(seed: number): { random: () => number; key: (letter: string | null) => string } {
  const rng = new Rng(seed);
  const random = () => rng.next();
  const bytes = (n: number) => Uint8Array.from({ length: n }, () => Math.floor(random() * 256));
  return {
    random,
    key(letter) {
      const id = (letter ?? '') + [...bytes(RANDOM_ID_LENGTH)].map((b) => ID_ALPHABET[b & 31]).join('');
      return `${KEY_PREFIX}${id}_${Buffer.from(bytes(32)).toString('base64url')}`;
    },
  };
}
