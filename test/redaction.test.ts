// Redaction by what could be a secret (edge/access/redaction.ts): no 8 characters in a row of an
// issued secret survive in a line or an answer, whatever was pasted around or into the key, while the
// API's own words (the fixture tree's paths, ids, symbols, names and synonyms, and the request log's
// lines for them) pass unchanged. The odds SECURITY.md states ("Redaction") are what these measure.
import { describe, expect, inject, it, vi } from 'vitest';
import { randomUUID } from 'node:crypto';
import { readdirSync, readFileSync } from 'node:fs';
import { join, relative } from 'node:path';
import { clip, REDACTED, REDACTED_KEY, redactKeys } from '../edge/access/redaction.js';
import { leaksSecret } from './helpers/targets.js';
import { PASTE_SHAPES, PASTE_SHAPES_BY_CHANCE, partsOf, seededPastes, withStrays } from './helpers/paste-shapes.js';

const KEYS = 10_000;
/** Every key and choice of the pastes below, from one seed. */
const seeded = seededPastes(44);

/** How many of `keys` keys, pasted by `paste`, leave 8 characters of their secret in the text. */
function leaks(keys: number, paste: (key: string) => { text: string; secret: string }): number {
  let n = 0;
  for (let i = 0; i < keys; i++) {
    const { text, secret } = paste(seeded.key(i % 2 ? 's' : null));
    if (leaksSecret(redactKeys(text), secret)) n++;
  }
  return n;
}

describe('no piece of a secret survives, however the key was pasted', () => {
  it(`in every paste shape, for ${KEYS.toLocaleString('en')} keys each`, () => {
    const leaked: Record<string, number> = {};
    for (const [shape, paste] of Object.entries(PASTE_SHAPES)) {
      const n = leaks(KEYS, (key) => paste(key, seeded.random));
      if (n) leaked[shape] = n;
    }
    // Counts only: a failure must not print a key (the run's key scan would rightly fail on it).
    expect(leaked).toEqual({});
  });

  it('in a log line and in an error with its stack, as the logger writes them', () => {
    const line = (path: string) =>
      JSON.stringify({
        level: 'info',
        time: new Date().toISOString(),
        method: 'GET',
        path,
        status: 404,
        request_id: randomUUID(),
      });
    const error = (text: string) =>
      JSON.stringify({
        level: 'error',
        err: {
          message: `counter broke for ${text}`,
          stack: `Error: counter broke for ${text}\n    at check (file:///x.js:1:2)`,
        },
      });
    const n = leaks(KEYS, (key) => {
      const { secret } = partsOf(key);
      const pasted = withStrays(seeded.random() < 0.5 ? key : secret, 1, seeded.random);
      return { text: seeded.random() < 0.5 ? line(`/api/v1/genes/${pasted}`) : error(pasted), secret };
    });
    expect(n).toBe(0);
  });

  it('keeps within the stated odds where the rule cannot be sure: two or three stray characters, or upper-cased with one', () => {
    // SECURITY.md ("Redaction") states the odds; the bounds leave room for chance at this sample
    // size (10,000 keys), not for a rule made weaker.
    for (const [shape, paste] of Object.entries(PASTE_SHAPES_BY_CHANCE))
      expect(
        leaks(KEYS, (key) => paste(key, seeded.random)),
        shape,
      ).toBeLessThan(3);
    const three = leaks(KEYS, (key) => {
      const { secret } = partsOf(key);
      return { text: `/api/v1/search?query=${withStrays(secret, 3, seeded.random)}`, secret };
    });
    expect(three).toBeLessThan(10);
    const upper = leaks(KEYS, (key) => {
      const secret = partsOf(key).secret.toUpperCase();
      return { text: `/api/v1/genes/${withStrays(secret, 1, seeded.random)}`, secret };
    });
    expect(upper).toBeLessThan(KEYS * 0.12);
  });
});

/** The fixture release's own words: every path of its tree, and every id, symbol, synonym, name and
 * transcript name its genes and isoforms hold (what a client asks for and searches with). */
function apiWords(tree: string): { paths: string[]; words: string[] } {
  const paths: string[] = [];
  const words = new Set<string>();
  const walk = (dir: string) => {
    for (const entry of readdirSync(dir, { withFileTypes: true })) {
      const file = join(dir, entry.name);
      if (entry.isDirectory()) walk(file);
      else paths.push(`/${relative(tree, file)}`);
    }
  };
  walk(tree);
  const add = (...values: unknown[]) => {
    for (const v of values) if (typeof v === 'string' && v) words.add(v);
  };
  for (const path of paths) {
    if (!/^\/api\/v1\/(genes|isoforms)\/[^/]+\.json$/.test(path)) continue;
    const record = JSON.parse(readFileSync(join(tree, path), 'utf8'));
    add(record.gene_id, record.gene_id_versioned, record.symbol, record.name, record.transcript_id);
    add(record.transcript_name, record.gene_symbol, ...(record.synonyms ?? []), ...(record.associated_genes ?? []));
    for (const x of record.xrefs ?? []) add(x.id, x.url);
    for (const i of record.isoforms ?? []) add(i.transcript_id, i.transcript_name);
  }
  return { paths, words: [...words] };
}

describe("the API's own words pass unchanged", () => {
  const { paths, words } = apiWords(inject('fixtureTree'));

  it('every path of the fixture tree, as a target and in its request log line', () => {
    expect(paths.length).toBeGreaterThan(1000);
    const changed = paths.filter((path) => {
      const line = JSON.stringify({
        level: 'info',
        time: new Date().toISOString(),
        client: '127.0.0.1',
        method: 'GET',
        path,
        status: 200,
        bytes: 983,
        ms: 4.7,
        release: '2026.11-chr22-fixture',
        route: 'geneIsoforms',
        request_id: randomUUID(),
      });
      return redactKeys(path) !== path || redactKeys(line) !== line;
    });
    expect(changed).toEqual([]);
  });

  it('every id, symbol, synonym, name and transcript name, alone and as a search', () => {
    expect(words.length).toBeGreaterThan(1000);
    const changed = words.filter((word) => {
      const search = `/api/v1/search?query=${encodeURIComponent(word)}&limit=10`;
      return redactKeys(word) !== word || redactKeys(search) !== search;
    });
    expect(changed).toEqual([]);
  });
});

describe('what redaction writes', () => {
  const key = seeded.key('s');
  const { secret } = partsOf(key);

  it('keeps the key prefix in the marker where a key was, and is the same when run again', () => {
    expect(redactKeys(`asked for ${key}`)).toBe(`asked for ${REDACTED_KEY}`);
    expect(redactKeys(`/api/v1/genes/${secret}`)).toBe(`/api/v1/genes/${REDACTED}`);
    for (const text of [`a ${key} b`, `q=${withStrays(secret, 2, seeded.random)}&limit=5`, key.toUpperCase()]) {
      const once = redactKeys(text);
      expect(redactKeys(once)).toBe(once);
      expect(leaksSecret(once, secret) || leaksSecret(once, secret.toUpperCase())).toBe(false);
    }
  });

  it('returns text with nothing that could be a secret as it was, encoding and all', () => {
    for (const text of [
      '/api/v1/genes/%41BC?release=2026.11-chr22-demo',
      '/api/v1/search?query=tumor%20suppressor+TP53',
      'isoatlas serving /srv/atlas at http://127.0.0.1:8080/api/v1/ (access: open; Ctrl-C to stop)',
      'Error: ENOENT: no such file or directory\n    at Object.readFileSync (node:fs:448:20)',
      `${REDACTED_KEY} and ${REDACTED}`,
    ])
      expect(redactKeys(text)).toBe(text);
  });

  it('reads a piece quoted alone against the request it came from', () => {
    // A key cut across two parameters: the problem's detail quotes only the second piece, which
    // alone looks like nothing; the instance (the whole target) shows what it is.
    const target = `/api/v1/search?query=${secret.slice(0, 30)}&limit=${secret.slice(30)}`;
    const detail = `"limit" must be an integer; got "${secret.slice(30)}"`;
    expect(leaksSecret(redactKeys(detail, target), secret)).toBe(false);
    expect(redactKeys(detail, target)).toBe(`"limit" must be an integer; got "${REDACTED}"`);
    const plain = '"limit" must be an integer; got "TBC1D22A-201"';
    expect(redactKeys(plain, '/api/v1/search?query=PRR5&limit=TBC1D22A-201')).toBe(plain);
  });

  it('answers each text the same whatever was read before it (the readings it keeps of recent texts)', async () => {
    // Targets and the members that quote them, some holding pieces of a secret, some the API's words;
    // read in turn as a problem reads them, then again in other orders.
    const targets = [
      `/api/v1/search?query=${secret.slice(0, 30)}&limit=${secret.slice(30)}`,
      '/api/v1/genes/NOSUCHGENE1',
      `/api/v1/genes/${secret}`,
      '/api/v1/search?query=PRR5&limit=TBC1D22A-201',
      `/api/v1/genes/${secret.toUpperCase()}`,
      '/api/v1/isoforms/PRR5-201',
    ];
    const calls = targets.flatMap((target): [string, string?][] => [
      [target],
      [`no gene with symbol or id "${target.slice(14)}"`, target],
      [`got "${secret.slice(30)}"`, target],
      ['/api/v1/release', target],
    ]);
    const expected = new Map<[string, string?], string>();
    for (const c of calls) {
      // Each answer from a module that has read nothing before.
      vi.resetModules();
      expected.set(c, (await import('../edge/access/redaction.js')).redactKeys(c[0], c[1]));
    }
    for (let round = 0; round < 12; round++) {
      // Turned by a different amount each round, every other round backwards.
      const turned = [...calls.slice((round * 5) % calls.length), ...calls.slice(0, (round * 5) % calls.length)];
      for (const c of round % 2 ? turned.reverse() : turned)
        expect(redactKeys(c[0], c[1]), `${c.join(' | ')} in round ${round}`).toBe(expected.get(c));
    }
    expect([...expected.values()].filter((v, i) => v !== calls[i][0]).length).toBeGreaterThan(0);
  });

  it('clip cuts what is already redacted, so no cut leaves a piece behind', () => {
    for (let cut = 1; cut < 60; cut++) expect(leaksSecret(clip(`x${secret}`, cut), secret), String(cut)).toBe(false);
    expect(clip(`/api/v1/genes/${key}`, 20)).toBe(`/api/v1/genes/${REDACTED_KEY}`.slice(0, 20));
  });
});
