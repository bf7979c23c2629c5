// API keys: format, hashing and verification, shared by the `isoatlas keys` CLI (which issues them)
// and the edge (which checks them). A key is `isoatlas_<id>_<secret>`: the id finds the registry
// record without scanning; the secret is 32 random bytes (256 bits, base64url). The id is its tier's
// letter followed by random base32 characters, so the CDN's WAF reads the tier from the key; keys
// issued before tiers had letters have the random part only (legacy ids) and stay valid.
// Only HMAC-SHA-256(server secret, key) is ever stored, and it is compared with WebCrypto's
// constant-time HMAC verification.

import { ID_ALPHABET } from './config.js';

export const KEY_PREFIX = 'isoatlas_';
export const KEY_PATTERN = /^isoatlas_([a-z2-7]{8,9})_([A-Za-z0-9_-]{43})$/;
/** The random part of an id; a lettered id has one character more. */
export const RANDOM_ID_LENGTH = 8;
/** A key id alone (what KEY_PATTERN's first group holds): legacy or lettered. */
export const KEY_ID = /^[a-z2-7]{8,9}$/;

const encoder = new TextEncoder();

function base64url(bytes: Uint8Array): string {
  let binary = '';
  for (const b of bytes) binary += String.fromCharCode(b);
  return btoa(binary).replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

function hex(bytes: ArrayBuffer): string {
  return [...new Uint8Array(bytes)].map((b) => b.toString(16).padStart(2, '0')).join('');
}

function fromHex(text: string): Uint8Array<ArrayBuffer> {
  const out = new Uint8Array(text.length / 2);
  for (let i = 0; i < out.length; i++) out[i] = parseInt(text.slice(i * 2, i * 2 + 2), 16);
  return out;
}

/** A new key and its id, which starts with `letter` (its tier's; null: a legacy id without one, for
 * tests of keys issued before letters). The caller shows the key once and stores only its hash. */
export function generateKey(letter: string | null): { id: string; key: string } {
  if (letter !== null && (letter.length !== 1 || !ID_ALPHABET.includes(letter)))
    throw new Error(`a tier letter is one character of a-z or 2-7, not ${JSON.stringify(letter)}`);
  const idBytes = crypto.getRandomValues(new Uint8Array(RANDOM_ID_LENGTH));
  const id = (letter ?? '') + [...idBytes].map((b) => ID_ALPHABET[b & 31]).join('');
  return { id, key: `${KEY_PREFIX}${id}_${base64url(crypto.getRandomValues(new Uint8Array(32)))}` };
}

/** The one spelling of a key in an Authorization header: the scheme in any letter case (RFC 7235
 * makes it case-insensitive), one space, the key, nothing else. The CDN's gate admits the same, and
 * WAF counts per key on the header lowercased, so each admitted spelling of a key is one count. */
const BEARER = /^Bearer (\S+)$/i;
/** Looks like Bearer credentials, whatever the spacing. */
const BEARER_SCHEME = /^\s*Bearer(\s|$)/i;

export type Credentials = { token: string } | { problem: 'other-scheme' | 'spelling' };

/** The token of an Authorization header spelled as admitted, or what is wrong with it. */
export function bearerToken(header: string): Credentials {
  if (!BEARER_SCHEME.test(header)) return { problem: 'other-scheme' };
  const match = BEARER.exec(header);
  return match ? { token: match[1] } : { problem: 'spelling' };
}

/** What a client told `spelling` should send instead. */
export const SPELLING_DETAIL =
  'send the key as "Authorization: Bearer <key>": the word Bearer, one space, the key, and nothing else (no other spaces or tabs)';

/** Is this id a legacy one (issued before tiers had letters)? */
export const isLegacyId = (id: string) => id.length === RANDOM_ID_LENGTH;

/** The key id of a well-formed key, or null. */
export function keyId(key: string): string | null {
  return KEY_PATTERN.exec(key)?.[1] ?? null;
}

/** Imports the server-side secret (hex, ≥ 32 bytes) as an HMAC key. */
export async function importServerSecret(secretHex: string): Promise<CryptoKey> {
  if (!/^[0-9a-f]{64,}$/i.test(secretHex.trim()))
    throw new Error('the API key secret must be at least 32 bytes written as hex');
  return crypto.subtle.importKey(
    'raw',
    fromHex(secretHex.trim().toLowerCase()),
    { name: 'HMAC', hash: 'SHA-256' },
    false,
    ['sign', 'verify'],
  );
}

export function newServerSecret(): string {
  return hex(crypto.getRandomValues(new Uint8Array(32)).buffer);
}

export async function hashKey(secret: CryptoKey, key: string): Promise<string> {
  return hex(await crypto.subtle.sign('HMAC', secret, encoder.encode(key)));
}

const DUMMY_HASH = '0'.repeat(64);

/** Does `key` hash to `storedHash`? Constant-time in the comparison (WebCrypto HMAC verify); a
 * missing record is checked against a dummy hash so unknown ids take as long as known ones. */
export async function keyMatches(secret: CryptoKey, key: string, storedHash: string | null): Promise<boolean> {
  const expected = storedHash && /^[0-9a-f]{64}$/.test(storedHash) ? storedHash : DUMMY_HASH;
  const ok = await crypto.subtle.verify('HMAC', secret, fromHex(expected), encoder.encode(key));
  return ok && storedHash !== null;
}
