// What the nginx front writes of a request target (edge/server/nginx-redaction.ts): the key prefix in
// every spelling the server reads as one, and the grammar of a target that cannot hold a piece of a
// secret. The patterns are read here by JavaScript; test/nginx-targets.test.ts has nginx read them.
import { describe, expect, it } from 'vitest';
import { KEY_PREFIX, generateKey } from '../edge/access/key-format.js';
import { redactKeys } from '../edge/access/redaction.js';
import { SAFE_TARGET, SECRET_RUN, keyPrefixPattern, routeShapes } from '../edge/server/nginx-redaction.js';
import { routes } from '../edge/contract/routes.js';

const prefixed = new RegExp(keyPrefixPattern());
const AFTER = 'abcdefgh_x';
const serverReadsAsKey = (text: string) => !redactKeys(text + AFTER).includes(AFTER);

describe("the key prefix, as the server's redaction reads it", () => {
  it('matches the spellings that escaped the front: a capital encoded, the other hex case, encoded twice', () => {
    for (const spelled of [
      '%49soatlas_',
      'i%53oatlas_',
      'is%4Fatlas_',
      'is%4fatlas_',
      'is%6Fatlas_',
      'ISOATLAS_',
      'IsOaTlAs_',
      '%2569soatlas%255F',
      '%252549SOATLAS%25255f',
      '%69%73%6F%61%74%6C%61%73%5F',
    ]) {
      expect(serverReadsAsKey(spelled), spelled).toBe(true);
      expect(prefixed.test(spelled), spelled).toBe(true);
    }
  });

  it('matches exactly what the server reads as the prefix, for every byte encoded at every place, in either hex case, once to three times', () => {
    let read = 0;
    for (let at = 0; at < KEY_PREFIX.length; at++)
      for (let byte = 0; byte < 256; byte++)
        for (const code of new Set([
          byte.toString(16).padStart(2, '0'),
          byte.toString(16).padStart(2, '0').toUpperCase(),
        ]))
          for (const again of ['', '25', '2525']) {
            const spelled = `${KEY_PREFIX.slice(0, at)}%${again}${code}${KEY_PREFIX.slice(at + 1)}`;
            const server = serverReadsAsKey(spelled);
            if (server) read++;
            expect(prefixed.test(spelled), spelled).toBe(server);
          }
    // Each place: a letter in two cases and two hex cases where its code has a letter, or `_`, at three depths.
    expect(read).toBeGreaterThanOrEqual(KEY_PREFIX.length * 2 * 3);
  });

  it('does not match a text one character off', () => {
    for (const near of ['isoatlas-', 'is0atlas_', 'isoatla_', '%2Esoatlas_', 'isoatlas%5G', 'iso%25atlas_'])
      expect([prefixed.test(near), serverReadsAsKey(near)], near).toEqual([false, false]);
  });
});

describe('a target the front writes as it is', () => {
  const safe = new RegExp(`^${SAFE_TARGET}$`);

  it('is made of short runs between separators, with no percent sign', () => {
    for (const target of ['/api/v1/release', '/metrics?x=1', '/api/v1/genes/PRR5', '/api/v1/openapi.json', '/'])
      expect(safe.test(target), target).toBe(true);
    for (const target of ['/api/v1/releases', '/api/v1/genes/%41BC', '/api/v1/genes/ENSG00000099917', '/a b'])
      expect(safe.test(target), target).toBe(false);
  });

  it(`never holds ${SECRET_RUN} characters in a row of a secret, wherever in a target a key or its secret is pasted`, () => {
    for (let i = 0; i < 50; i++) {
      const { key } = generateKey(null);
      const secret = key.slice(-43);
      for (let from = 0; from + SECRET_RUN <= secret.length; from += 5) {
        const piece = secret.slice(from, from + SECRET_RUN);
        for (const target of [`/${piece}`, `/api/v1/genes/PRR5?limit=${piece}`, `/x.${piece}.y`])
          expect(safe.test(target), target).toBe(false);
      }
    }
  });

  it('or else the route it names, for every route of the table', () => {
    const shapes = routeShapes();
    expect(shapes.map((s) => s.route)).toEqual(routes.map((r) => `/api/v1${r.path}`));
    const genes = shapes.find((s) => s.route === '/api/v1/genes/{symbol}')!;
    expect(new RegExp(`^${genes.pattern}$`).test('/api/v1/genes/ENSG00000099917?release=x')).toBe(true);
    expect(new RegExp(`^${genes.pattern}$`).test('/api/v1/genes/ENSG00000099917/isoforms')).toBe(false);
  });
});
