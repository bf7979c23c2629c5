// Request targets for the tests of edge/contract/targets.ts (targets.test.ts, nginx-targets.test.ts),
// and how they look for key material.

/** Refused: each would name another path once parsed, or could not be a segment of the route table. */
export const REFUSED = [
  '/api/v1/genes/..',
  '/api/v1/genes/.',
  '/api/v1/genes/%2e%2e',
  '/api/v1/genes/%2E.',
  '/api/v1/genes/.%2e/x',
  '/api/v1/../v1/release',
  '/api/v1/genes/PRR5/isoforms/..?limit=1',
  '/api/v1/genes/a%2Fb',
  '/api/v1/genes/a%2fb',
  '/api/v1/genes/a%5Cb',
  '/api/v1/genes/a%5cb',
  '/api/v1/genes/a\\b',
  '/x\\..\\metrics',
  '/api/v1/genes/%00',
  '/api/v1/genes/a%ZZ',
  '/api/v1/genes/a%4',
  '/api/v1/genes/a%',
  `/api/v1/genes/${'A'.repeat(201)}`,
  `/api/v1/genes/${'%C3%A9'.repeat(201)}`,
  `/api/v1/genes/${'%41'.repeat(201)}`,
  '/metrics#x',
  '*',
  'http://atlas.test/api/v1/release',
];
/** Accepted by the check (the router may still refuse or not find them): what a client legitimately
 * sends, and the closest near misses. */
export const ACCEPTED = [
  '/api/v1/',
  '/api/v1/genes/PRR5',
  '/api/v1/genes/PRR5?release=x',
  '/api/v1/search?query=a/../b',
  '/api/v1/search?query=a%ZZ%00\\',
  '/api/v1/genes/...',
  '/api/v1/genes/.x',
  '/api/v1/genes/x.',
  '/api/v1/genes/%41BC',
  `/api/v1/genes/${'A'.repeat(200)}`,
  `/api/v1/genes/${'%C3%A9'.repeat(200)}`,
  '//api/v1/release',
  '/api/v1//release',
  '/%6Detrics',
];

/** Does `text` hold any 8 characters in a row of `secret`, as they are or percent-decoded? */
export function leaksSecret(text: string, secret: string): boolean {
  let decoded = text;
  for (let i = 0; i < 3; i++)
    decoded = decoded.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));
  for (let i = 0; i + 8 <= secret.length; i++) {
    const piece = secret.slice(i, i + 8);
    if (text.includes(piece) || decoded.includes(piece)) return true;
  }
  return false;
}
