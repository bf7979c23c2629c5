// Generated requests for property-based fuzzing (fast-check): real names of a tree mutated, hostile
// path segments, query strings, headers and methods. test/fuzz.test.ts drives the edge function with
// them in process, test/serve-fuzz.test.ts a real `isoatlas serve`.
import fc from 'fast-check';
import fg from 'fast-glob';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';

/** Names of a tree's genes and isoforms that requests ask for. */
export interface TreeNames {
  genes: string[];
  isoforms: string[];
}

/** Real names from the API files themselves (not the edge's alias maps, whose layout may change):
 * ids, symbols and transcript names, a spread of them, plus the symbols naming several genes. */
export async function namesOf(tree: string): Promise<TreeNames> {
  const symbols = new Map<string, number>();
  const genes: string[] = [];
  for (const [i, file] of (await fg('api/v1/genes/*.json', { cwd: tree })).entries()) {
    const gene = JSON.parse(readFileSync(join(tree, file), 'utf8')) as { gene_id: string; symbol: string | null };
    if (gene.symbol) symbols.set(gene.symbol, (symbols.get(gene.symbol) ?? 0) + 1);
    if (i % 23 === 0) genes.push(gene.gene_id, gene.symbol ?? gene.gene_id, (gene.symbol ?? '').toLowerCase());
  }
  const isoforms: string[] = [];
  for (const [i, file] of (await fg('api/v1/isoforms/*.json', { cwd: tree })).entries()) {
    if (i % 61 !== 0) continue;
    const isoform = JSON.parse(readFileSync(join(tree, file), 'utf8')) as {
      transcript_id: string;
      transcript_name: string;
    };
    isoforms.push(isoform.transcript_id, isoform.transcript_name, isoform.transcript_id.replace(/\.\d+$/, ''));
  }
  const withStructure = (await fg('structures/*.cif', { cwd: tree }))
    .filter((_, i) => i % 5 === 0)
    .map((f) => f.slice('structures/'.length, -'.cif'.length));
  return {
    genes: [
      ...genes.filter(Boolean),
      ...[...symbols].filter(([, n]) => n > 1).map(([s]) => s),
      'PRR5',
      'ENSG00000186654.21',
    ],
    isoforms: [...isoforms, ...withStructure, 'PRR5-201', 'ENST00000006251'],
  };
}

/** Code points of the UTF-16 surrogates, which no string unit of fast-check yields alone. */
const SURROGATE_FIRST = 0xd800;
const SURROGATES = 0xe000 - SURROGATE_FIRST;

/** fast-check's `unit: 'binary'` (any code point but a surrogate), built as fast-check builds it (an
 * index, mapped to the code points below the surrogates, then those above) but with the way back
 * from a code point to its index computed: the built-in unit tabulates it for all 1.1 million code
 * points when a string of it is first made, more than a second of CPU in every process. The same
 * index maps to the same value, so the same strings are generated and shrunk. */
const binaryUnit = fc.nat({ max: 0x10ffff - SURROGATES }).map(
  (index) => String.fromCodePoint(index < SURROGATE_FIRST ? index : index + SURROGATES),
  (value) => {
    const code = typeof value === 'string' ? value.codePointAt(0) : undefined;
    if (code === undefined || String.fromCodePoint(code) !== value || (code >= SURROGATE_FIRST && code < 0xe000))
      throw new Error('not a value of the binary unit');
    return code < SURROGATE_FIRST ? code : code - SURROGATES;
  },
);

/** The request arbitraries over names read later (`names` is called when a value is generated). */
export function requestArbitraries(names: () => TreeNames) {
  const asciiText = (maxLength: number) =>
    fc.string({ unit: fc.integer({ min: 0x20, max: 0x7e }).map((c) => String.fromCharCode(c)), maxLength });
  const anyText = (maxLength: number) => fc.string({ unit: binaryUnit, maxLength });

  /** Nasty path segments: traversal in every spelling, encoded separators, NUL, invalid escapes. */
  const hostileSegment = fc.constantFrom(
    '.',
    '..',
    '%2e',
    '%2e%2e',
    '%2E%2e',
    '.%2e',
    '%2e.',
    '..%2f',
    '%2f',
    '%2F',
    '%5c',
    '%5C',
    '\\',
    '..\\..',
    '%00',
    '%00.json',
    'x%00y',
    '%',
    '%z',
    '%zz',
    '%%',
    '%c0%ae%c0%ae',
    '%c0%af',
    '%e2%80%ae',
    '%ff',
    '%u002e',
    '%252e%252e',
    '%252f',
    '~',
    '*',
    ';',
    ';x=1',
    'manifest.json',
    'edge',
    'aliases.json',
    '..%2f..%2fmanifest.json',
    '%2e%2e%2fedge%2faliases.json',
    '.json',
    'x.json',
    'release.json',
    '..%2F..%2F..%2F..%2Fetc%2Fpasswd',
    'CON',
    'nul',
    '\u0000',
    '\t',
    ' ',
    '%20',
    '+',
    '#',
    '?',
    '%3f',
    '%23',
  );

  /** A real name mutated: case, a character inserted or dropped, a suffix, a version, an encoding. */
  function mutated(names: () => string[]) {
    return fc.tuple(fc.nat(), fc.nat(), fc.integer({ min: 0, max: 9 }), asciiText(3)).map(([pick, at, how, extra]) => {
      const list = names();
      const name = list[pick % list.length];
      const i = at % (name.length + 1);
      switch (how) {
        case 0:
          return name.toUpperCase();
        case 1:
          return name.slice(0, i) + extra + name.slice(i);
        case 2:
          return name.slice(0, i) + name.slice(i + 1);
        case 3:
          return `${name}.999`;
        case 4:
          return encodeURIComponent(name).replace(/[A-Za-z0-9]/g, (c, k) =>
            k % 2 ? `%${c.charCodeAt(0).toString(16)}` : c,
          );
        case 5:
          return `${name}%00`;
        case 6:
          return `${name}/`;
        case 7:
          return ` ${name}`;
        case 8:
          return `${name}.json`;
        default:
          return name;
      }
    });
  }

  const realGene = fc.nat().map((n) => names().genes[n % names().genes.length]);
  const realIsoform = fc.nat().map((n) => names().isoforms[n % names().isoforms.length]);

  const segment = fc.oneof(
    { weight: 4, arbitrary: realGene },
    { weight: 4, arbitrary: realIsoform },
    { weight: 4, arbitrary: mutated(() => names().genes) },
    { weight: 4, arbitrary: mutated(() => names().isoforms) },
    { weight: 5, arbitrary: hostileSegment },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }) },
    { weight: 2, arbitrary: fc.string({ unit: 'grapheme', maxLength: 12 }).map(encodeURIComponent) },
    { weight: 1, arbitrary: anyText(12) },
    { weight: 1, arbitrary: fc.integer({ min: 150, max: 6_000 }).map((n) => 'A'.repeat(n)) }, // overlong
    { weight: 1, arbitrary: fc.integer({ min: 60, max: 400 }).map((n) => '%41'.repeat(n)) }, // overlong once decoded
  );

  /** Route shapes with fuzzed parameters, and free-form paths under and outside the API. */
  const path = fc.oneof(
    {
      weight: 3,
      arbitrary: fc.oneof(
        fc
          .tuple(realGene, fc.constantFrom('', '/isoforms', '/isoforms/'))
          .map(([g, rest]) => `/api/v1/genes/${encodeURIComponent(g)}${rest}`),
        fc
          .tuple(realIsoform, fc.constantFrom('', '/domains', '/neoantigens', '/structure', '/structure/'))
          .map(([t, rest]) => `/api/v1/isoforms/${encodeURIComponent(t)}${rest}`),
        realIsoform.map((t) => `/structures/${t}.cif`),
      ),
    },
    {
      weight: 6,
      arbitrary: fc
        .tuple(
          fc.constantFrom('/api/v1/genes/', '/api/v1/isoforms/', '/structures/'),
          segment,
          fc.constantFrom(
            '',
            '/',
            '/isoforms',
            '/domains',
            '/neoantigens',
            '/structure',
            '//',
            '/isoforms/',
            '.cif',
            '/..',
            '/%2e%2e/manifest.json',
          ),
        )
        .map((p) => p.join('')),
    },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        '/api/v1',
        '/api/v1/',
        '/api/v1/release',
        '/api/v1/openapi.json',
        '/api/v1/search',
        '/api/v1//release',
        '/api/v1/release/',
        '/api/v1/release//',
        '/api/v2/release',
        '/api/V1/release',
        '/',
        '//api/v1/release',
        '/api/v1/./release',
        '/api/v1/../v1/release',
        '/api/v1/%2e%2e/v1/release',
        '/manifest.json',
        '/edge/aliases.json',
        '/api/v1/release.json',
        '/structures/',
        '/structures/x',
        '/structures/..%2fmanifest.json',
      ),
    },
    {
      weight: 3,
      arbitrary: fc
        .tuple(
          fc.constantFrom('/api/v1/', '/', '/api/', '/structures/'),
          fc.array(segment, { maxLength: 6 }),
          fc.constantFrom('/', '//', '\\', '/./', '/../'),
        )
        .map(([prefix, parts, sep]) => prefix + parts.join(sep)),
    },
  );

  const integerValue = fc.oneof(
    fc.integer({ min: -5, max: 130 }).map(String),
    fc.constantFrom(
      '',
      ' ',
      '0',
      '-0',
      '+5',
      ' 5',
      '5 ',
      '05',
      '1.5',
      '1.0',
      '1e2',
      '1E1',
      '0x10',
      'NaN',
      'Infinity',
      '-Infinity',
      'null',
      'true',
      '[]',
      '%00',
      '1%00',
      '٣',
      '５',
      '9007199254740993',
      '99999999999999999999',
      '-99999999999999999999',
      '1,2',
      '10;5',
    ),
    fc.double().map(String),
    fc.integer({ min: 16, max: 2_000 }).map((n) => '9'.repeat(n)),
    asciiText(20),
  );

  const queryValue = fc.oneof(
    integerValue,
    realGene,
    realIsoform,
    fc.string({ unit: 'grapheme', maxLength: 120 }),
    anyText(30),
    fc.integer({ min: 90, max: 5_000 }).map((n) => 'x'.repeat(n)),
  );
  const queryName = fc.oneof(
    { weight: 8, arbitrary: fc.constantFrom('limit', 'offset', 'query') },
    {
      weight: 1,
      arbitrary: fc.constantFrom(
        'LIMIT',
        'limit[]',
        'q',
        '',
        'utm_source',
        'callback',
        '__proto__',
        'constructor',
        'toString',
      ),
    },
    { weight: 1, arbitrary: asciiText(10) },
  );

  /** A query string: pairs, encoded or raw, sometimes with a bare name, a stray `&` or `=`. */
  const queryString = fc
    .array(fc.tuple(queryName, queryValue, fc.constantFrom('encoded', 'raw', 'bare')), { maxLength: 5 })
    .chain((pairs) =>
      fc
        .constantFrom('&', '&&', ';')
        .map((sep) =>
          pairs
            .map(([n, v, how]) =>
              how === 'bare' ? n : how === 'raw' ? `${n}=${v}` : `${encodeURIComponent(n)}=${encodeURIComponent(v)}`,
            )
            .join(sep),
        ),
    );

  const queryRoute = fc.oneof(
    fc.constantFrom(
      '/api/v1/search',
      '/api/v1/release',
      '/api/v1/genes/PRR5/isoforms',
      '/api/v1/genes/Y_RNA/isoforms',
      '/api/v1/isoforms/PRR5-201/neoantigens',
      '/api/v1/isoforms/PRR5-201',
      '/structures/ENST00000216124.10.cif',
    ),
    realGene.map((g) => `/api/v1/genes/${encodeURIComponent(g)}/isoforms`),
    realIsoform.map((t) => `/api/v1/isoforms/${encodeURIComponent(t)}/neoantigens`),
  );

  /** Header values Headers accepts: Latin-1 without CR, LF or NUL. */
  const headerText = (maxLength: number) =>
    fc.string({
      unit: fc
        .integer({ min: 0x20, max: 0xff })
        .filter((c) => c !== 0x7f)
        .map((c) => String.fromCharCode(c)),
      maxLength,
    });

  const authorization = fc.oneof(
    fc.constantFrom(
      'Bearer',
      'Bearer ',
      'bearer',
      'BEARER x',
      'Bearer  ',
      'Basic dXNlcjpwYXNz',
      'Token abc',
      'Bearer isoatlas_',
      'Bearer isoatlas_aaaaaaaa_',
      'Bearer a b',
      'Bearer\tx',
      'Digest username="x"',
      'Bearer isoatlas_AAAAAAAA_' + 'A'.repeat(43),
    ),
    fc
      .tuple(
        fc.constantFrom('Bearer ', 'bearer ', 'Bearer  ', ''),
        fc.stringMatching(/^isoatlas_[a-z2-7]{8,9}_[A-Za-z0-9_-]{40,46}$/),
      )
      .map(([s, k]) => s + k),
    headerText(60).map((v) => `Bearer ${v}`),
    headerText(60),
    fc.integer({ min: 1_000, max: 12_000 }).map((n) => `Bearer ${'k'.repeat(n)}`),
  );
  const etag = fc.oneof(
    fc.constantFrom('*', '""', '"', 'W/', 'W/"x"', ',', ',,,', ' * '),
    headerText(80),
    fc
      .integer({ min: 50, max: 300 })
      .map((n) => Array.from({ length: n }, (_, i) => `"${i.toString(16).padStart(64, '0')}"`).join(', ')),
  );
  const forwardedFor = fc.oneof(
    fc.constantFrom(
      '127.0.0.1',
      '::1',
      'unknown',
      '999.999.999.999',
      '1.2.3.4, 5.6.7.8',
      '',
      ',',
      '<script>',
      '0'.repeat(5000),
    ),
    headerText(40),
    fc.ipV4(),
    fc.ipV6(),
  );
  const accept = fc.oneof(
    fc.constantFrom(
      '*/*',
      'application/json',
      'text/html',
      'application/problem+json;q=0',
      '',
      'application/*;q=abc',
      ';;;',
    ),
    headerText(40),
  );
  const headers = fc.record(
    {
      Authorization: authorization,
      'If-None-Match': etag,
      'X-Forwarded-For': forwardedFor,
      Accept: accept,
      'Accept-Encoding': fc.constantFrom('gzip', 'br, deflate', '*', 'identity;q=0'),
      Origin: fc.constantFrom('null', 'https://evil.example', 'file://'),
      Range: fc.constantFrom('bytes=0-10', 'bytes=-1', 'bytes=99999999-', 'lines=1-2'),
    },
    { requiredKeys: [] },
  );

  const method = fc.oneof(
    { weight: 6, arbitrary: fc.constant('GET') },
    {
      weight: 2,
      arbitrary: fc.constantFrom(
        'HEAD',
        'OPTIONS',
        'POST',
        'PUT',
        'DELETE',
        'PATCH',
        'get',
        'head',
        'Get',
        'PROPFIND',
        'FOO',
        'M-SEARCH',
      ),
    },
  );

  return {
    asciiText,
    anyText,
    hostileSegment,
    mutated,
    realGene,
    realIsoform,
    segment,
    path,
    integerValue,
    queryValue,
    queryName,
    queryString,
    queryRoute,
    headerText,
    authorization,
    etag,
    forwardedFor,
    accept,
    headers,
    method,
  };
}
