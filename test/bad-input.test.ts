// Malformed input stops the import with a message naming the file, the line and the problem, exit
// code 3, and leaves no half-written database. Fixtures are real lines of the chr22 inputs, damaged.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import {
  copyFileSync,
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  rmSync,
  writeFileSync,
} from 'node:fs';
import Database from 'better-sqlite3';
import { createHash } from 'node:crypto';
import { gunzipSync } from 'node:zlib';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { inject } from 'vitest';
import { runCli } from './helpers/run.js';
import { DEMO } from '../build/paths.js';

const ROOT = join(__dirname, '..');
const realLines = (file: string, n: number) =>
  gunzipSync(readFileSync(join(ROOT, 'data/chr22', file)))
    .toString('utf8')
    .split('\n')
    .slice(0, n);

async function isoatlas(...args: string[]) {
  const r = await runCli(args, { env: { ...process.env, ISOATLAS_DEBUG: '' } });
  return { code: r.status, stderr: r.stderr };
}

/** The first lines of the reference GTF, undamaged. */
const good = realLines('gencode.v38.basic_chr22_corrected.gtf.gz', 40);

let dir: string;
beforeAll(() => {
  dir = mkdtempSync(join(tmpdir(), 'isoatlas-bad-'));
});
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** A release config whose reference GTF does not exist. */
const missingGtfConfig = {
  release: 'x',
  date: '2026-01-01',
  title: 't',
  assembly: 'a',
  reference: { gtf: 'none.gtf', source: 's' },
};

/** A reference-only release config over a GTF written by the test. */
function configFor(gtfLines: string[], name: string) {
  const gtf = join(dir, `${name}.gtf`);
  writeFileSync(gtf, gtfLines.join('\n') + '\n');
  const config = join(dir, `${name}.config.json`);
  writeFileSync(
    config,
    JSON.stringify({
      release: 'bad',
      date: '2026-11-22',
      title: 't',
      assembly: 'GRCh38',
      reference: { gtf, source: 'test' },
    }),
  );
  return { gtf, config };
}

/** The undamaged lines imported, once: the import is checked where it is the point, and its
 * database is what the build tests build from. */
let goodImport: Promise<{ code: number | null; stderr: string; db: string }> | undefined;
function importGood() {
  goodImport ??= (async () => {
    const db = join(dir, 'good.sqlite');
    return { db, ...(await isoatlas('import', 'core', '--config', configFor(good, 'good').config, '--out', db)) };
  })();
  return goodImport;
}

describe('core import of malformed inputs', () => {
  it('accepts the undamaged lines (the fixture itself is valid)', async () => {
    const r = await importGood();
    expect(r.stderr).toMatch(/imported \d+ genes/);
    expect(r.code).toBe(0);
  });

  it('rejects a truncated GTF line, naming file and line', async () => {
    const lines = [...good];
    lines[6] = lines[6].split('\t').slice(0, 5).join('\t');
    const { gtf, config } = configFor(lines, 'truncated');
    const out = join(dir, 'truncated.sqlite');
    const r = await isoatlas('import', 'core', '--config', config, '--out', out);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${gtf}:7: expected 9 tab-separated GTF fields, found 5`);
    expect(existsSync(out)).toBe(false);
    expect(readdirSync(dir).filter((f) => f.includes('.tmp-'))).toEqual([]);
  });

  it('rejects a duplicate transcript id, naming both lines', async () => {
    const transcriptLine = good.findIndex((l) => l.split('\t')[2] === 'transcript');
    const { gtf, config } = configFor([...good, good[transcriptLine]], 'duplicate');
    const r = await isoatlas('import', 'core', '--config', config, '--out', join(dir, 'duplicate.sqlite'));
    expect(r.code).toBe(3);
    const id = /transcript_id "([^"]+)"/.exec(good[transcriptLine])![1];
    expect(r.stderr).toContain(
      `${gtf}:${good.length + 1}: duplicate transcript id ${id} (first defined at line ${transcriptLine + 1})`,
    );
  });

  it('rejects a malformed attribute and a bad coordinate', async () => {
    const broken = [...good];
    broken[2] = broken[2].replace('transcript_id "', 'transcript_id ="');
    const coords = [...good];
    coords[3] = coords[3].replace(/\t(\d+)\t(\d+)\t/, '\t$2\tabc\t');
    // Independent imports (files of their own): run side by side.
    const run = (lines: string[], name: string) =>
      isoatlas('import', 'core', '--config', configFor(lines, name).config, '--out', join(dir, `${name}.sqlite`));
    const [attr, coord] = await Promise.all([run(broken, 'attr'), run(coords, 'coords')]);
    expect(attr.code).toBe(3);
    expect(attr.stderr).toMatch(/attr\.gtf:3: malformed attribute/);
    expect(coord.code).toBe(3);
    expect(coord.stderr).toMatch(/coords\.gtf:4: start and end must be integers/);
  });

  it('rejects a classification without a required column and with a bad value', async () => {
    const cls = realLines('gencode.v38.basic_chr22_classification.txt.gz', 5);
    const { gtf } = configFor(good, 'for-cls');
    const write = (name: string, lines: string[]) => {
      const file = join(dir, name);
      writeFileSync(file, lines.join('\n') + '\n');
      const config = join(dir, `${name}.json`);
      writeFileSync(
        config,
        JSON.stringify({
          release: 'bad',
          date: '2026-11-22',
          title: 't',
          assembly: 'GRCh38',
          reference: { gtf, classification: file, source: 'test' },
        }),
      );
      return { file, config };
    };
    const missing = write('missing-col.txt', [cls[0].replace('predicted_NMD', 'predicted_nmd'), ...cls.slice(1)]);
    const header = cls[0].split('\t');
    const row = cls[2].split('\t');
    row[header.indexOf('coding')] = 'maybe';
    const bad = write('bad-value.txt', [cls[0], cls[1], row.join('\t')]);
    const [r1, r2] = await Promise.all([
      isoatlas('import', 'core', '--config', missing.config, '--out', join(dir, 'c1.sqlite')),
      isoatlas('import', 'core', '--config', bad.config, '--out', join(dir, 'c2.sqlite')),
    ]);
    expect(r1.code).toBe(3);
    expect(r1.stderr).toContain(`${missing.file}:1: missing required column(s): predicted_NMD`);
    expect(r2.code).toBe(3);
    expect(r2.stderr).toContain(`${bad.file}:3: column "coding": expected coding or non_coding, found "maybe"`);
  });

  it('rejects an invalid release config and a missing input file with exit code 3', async () => {
    // A config file each, so the two imports run side by side.
    const [badDate, missingGtf] = await Promise.all(
      ['yesterday', '2026-01-01'].map((date, i) => {
        const config = join(dir, `bad-config-${i}.json`);
        writeFileSync(config, JSON.stringify({ ...missingGtfConfig, date }));
        return isoatlas('import', 'core', '--config', config, '--out', join(dir, `x-${i}.sqlite`));
      }),
    );
    expect(badDate.code).toBe(3);
    expect(badDate.stderr).toMatch(/invalid release config: line 1: \/date expected string to match/);
    expect(missingGtf.code).toBe(3);
    expect(missingGtf.stderr).toContain('none.gtf: file not found');
  });

  it('names each config problem once, with its line; a JSON syntax error with its line and column; a missing --out directory', async () => {
    // A config file each, so the three imports run side by side.
    const config = join(dir, 'lined-config.json');
    const syntax = join(dir, 'syntax-config.json');
    const valid = join(dir, 'valid-config.json');
    writeFileSync(
      config,
      [
        '{',
        '  "release": "x",',
        '  "date": 20261122,',
        '  "title": "t",',
        '  "assembly": "a",',
        '  "reference": { "source": "s" }',
        '}',
        '',
      ].join('\n'),
    );
    writeFileSync(syntax, ['{', '  "release": "x",', '  "date": "2026-11-22"', '  "title": "t"', '}', ''].join('\n'));
    writeFileSync(valid, JSON.stringify(missingGtfConfig));
    const [lined, comma, noDir] = await Promise.all([
      isoatlas('import', 'core', '--config', config, '--out', join(dir, 'y.sqlite')),
      isoatlas('import', 'core', '--config', syntax, '--out', join(dir, 'y-syntax.sqlite')),
      isoatlas('import', 'core', '--config', valid, '--out', '/nonexistent/x.sqlite'),
    ]);
    expect(lined.code).toBe(3);
    expect(lined.stderr).toContain(
      `${config}:3: invalid release config: line 3: /date expected string; line 6: /reference/gtf is required`,
    );
    expect(lined.stderr.match(/\/reference\/gtf/g)).toHaveLength(1);
    expect(comma.code).toBe(3);
    expect(comma.stderr).toContain(`${syntax}:4: the release config is not valid JSON: CommaExpected at column 3`);
    expect(noDir.code).toBe(2);
    expect(noDir.stderr).toContain('--out /nonexistent/x.sqlite: the directory /nonexistent does not exist');
  });

  it('answers usage errors with exit code 2 and help with 0', async () => {
    const [noOptions, badKind, help] = await Promise.all([
      isoatlas('import', 'core'),
      isoatlas('import', 'track', 'colours', '--db', 'x', '--file', 'y', '--source', 'z'),
      isoatlas('--help'),
    ]);
    expect(noOptions.code).toBe(2);
    expect(badKind.code).toBe(2);
    expect(help.code).toBe(0);
  });

  it('answers a --db that names no file with exit code 2, naming it and what to do', async () => {
    const none = join(dir, 'none.sqlite');
    const tsv = join(dir, 'any.tsv');
    writeFileSync(tsv, 'transcript_id\tposition\tresidue\tmodification\n');
    const runs = await Promise.all([
      isoatlas('import', 'track', 'ptm', '--db', none, '--file', tsv, '--source', 'z'),
      isoatlas('import', 'pfam', '--db', none, '--file', tsv),
      isoatlas('build', '--db', none, '--out', join(dir, 'no-tree')),
      isoatlas('generate', '--db', none, '--out', join(dir, 'no-tracks')),
    ]);
    for (const r of runs) {
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(
        `no release database at ${none}: check --db, or create it with \`isoatlas import core\``,
      );
    }
    expect(existsSync(join(dir, 'no-tree'))).toBe(false);
  });
});

describe('track import of malformed TSVs', () => {
  let db: string;
  let before: string;
  const sha = (file: string) => createHash('sha256').update(readFileSync(file)).digest('hex');
  beforeAll(() => {
    db = join(dir, 'tracks.sqlite');
    copyFileSync(inject('fixtureDb'), db);
    before = sha(db);
  });

  const track = async (kind: string, name: string, lines: string[]) => {
    const file = join(dir, name);
    writeFileSync(file, lines.join('\n') + '\n');
    return { file, ...(await isoatlas('import', 'track', kind, '--db', db, '--file', file, '--source', 'test')) };
  };

  it('rejects an unknown column', async () => {
    const r = await track('ptm', 'unknown-col.tsv', [
      'transcript_id\tposition\tresidue\tmodification\tcolour',
      'ENST00000006251.11\t1\tM\tx\tred',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(`${r.file}:1: unknown column(s): colour`);
  });

  it('rejects a position beyond the protein and a residue that is not there', async () => {
    // ENST00000006251.11 (PRR5-201) is 379 aa and starts MSSPS…
    let r = await track('neoantigens', 'beyond.tsv', [
      'transcript_id\tpeptide\tallele\taffinity_nm\tstart',
      'ENST00000006251.11\tMSSPSLSDL\tHLA-A*02:01\t50\t400',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain(
      `${r.file}:2: column "start": position 400 is beyond the end of ENST00000006251.11's protein (379 aa)`,
    );
    r = await track('ptm', 'residue.tsv', [
      'transcript_id\tposition\tresidue\tmodification',
      'ENST00000006251.11\t2\tT\tPhosphothreonine',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('ENST00000006251.11 has S at position 2, not T');
  });

  it('rejects an unknown transcript and a non-coding one', async () => {
    let r = await track('domains', 'unknown-tx.tsv', [
      'transcript_id\tsource\taccession\tstart\tend',
      'ENST00000000000.1\tpfam\tPF00069\t1\t50',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('ENST00000000000.1 is not an isoform of this release');
    r = await track('domains', 'noncoding.tsv', [
      'transcript_id\tsource\taccession\tstart\tend',
      'PB.3797.1\tpfam\tPF00069\t1\t50',
    ]);
    expect(r.code).toBe(3);
    expect(r.stderr).toContain('PB.3797.1 is not a coding isoform');
  });

  it('refuses an input with a header and no rows (exit 3), a track and gene info alike, unless --allow-empty says so', async () => {
    const empty = await Promise.all([
      track('ptm', 'empty-ptm.tsv', ['transcript_id\tposition\tresidue\tmodification']),
      track('domains', 'empty-domains.tsv', ['transcript_id\tsource\taccession\tstart\tend']),
    ]);
    for (const r of empty) {
      expect(r.code, r.stderr).toBe(3);
      expect(r.stderr).toContain(`${r.file}: no `);
      expect(r.stderr).toContain('the release was not changed: pass --allow-empty if an empty track is meant');
    }
    const geneInfo = join(dir, 'empty-gene-info.tsv');
    const header = gunzipSync(readFileSync(DEMO.geneInfo)).toString('utf8').split('\n')[0];
    writeFileSync(geneInfo, `${header}\n`);
    const info = await isoatlas('import', 'gene-info', '--db', db, '--file', geneInfo, '--source', 'test');
    expect(info.code, info.stderr).toBe(3);
    expect(info.stderr).toContain(`${geneInfo}: no rows of gene info (a header alone); the release was not changed`);
  });

  it('leaves the release database untouched after every failed import', () => {
    expect(sha(db)).toBe(before);
    expect(readdirSync(dir).filter((f) => f.startsWith('tracks.sqlite.tmp'))).toEqual([]);
  });

  it('imports a valid track atomically and counts it in the metrics', async () => {
    const r = await track('ptm', 'valid.tsv', [
      'transcript_id\tposition\tresidue\tmodification\tsource',
      'ENST00000006251.11\t3\tS\tPhosphoserine\tcurated',
    ]);
    expect(r.stderr).toContain('imported 1 ptm records');
    expect(r.code).toBe(0);
    expect(sha(db)).not.toBe(before);
    // Importing the same file twice is refused.
    const again = await isoatlas('import', 'track', 'ptm', '--db', db, '--file', r.file, '--source', 'test');
    expect(again.code).toBe(3);
    expect(again.stderr).toContain('was already imported');
  });

  it('records an empty track when --allow-empty says it is meant', async () => {
    const file = join(dir, 'meant-empty.tsv');
    writeFileSync(file, 'transcript_id\tposition\tresidue\tmodification\n');
    const r = await isoatlas('import', 'track', 'ptm', '--db', db, '--file', file, '--source', 'none', '--allow-empty');
    expect(r.code, r.stderr).toBe(0);
    expect(r.stderr).toContain(`imported 0 ptm records from ${file}`);
    const release = new Database(db, { readonly: true });
    expect(
      release.prepare("SELECT records FROM track_sources WHERE input_file = 'meant-empty.tsv'").pluck().get(),
    ).toBe(0);
    release.close();
  });
});

describe('build --out never deletes what it did not make', () => {
  let db: string;
  beforeAll(async () => {
    const imported = await importGood();
    db = imported.db;
    expect(imported.code).toBe(0);
  });

  it('refuses a non-empty directory that is not a tree, with or without --force, and leaves it as it was', async () => {
    const precious = join(dir, 'precious');
    rmSync(precious, { recursive: true, force: true });
    mkdirSync(precious);
    writeFileSync(join(precious, 'notes.txt'), 'my notes');
    for (const extra of [[], ['--force']]) {
      const r = await isoatlas('build', '--db', db, '--out', precious, ...extra);
      expect(r.code, r.stderr).toBe(2);
      expect(r.stderr).toContain(`--out ${precious} is not empty and is not an isoatlas tree (no manifest.json)`);
      expect(r.stderr).toContain('nothing was changed');
      expect(readdirSync(precious)).toEqual(['notes.txt']);
      expect(readFileSync(join(precious, 'notes.txt'), 'utf8')).toBe('my notes');
    }
  });

  it('replaces an earlier tree only with --force, and never one holding files its manifest does not list', async () => {
    const tree = join(dir, 'tree-out');
    rmSync(tree, { recursive: true, force: true });
    expect((await isoatlas('build', '--db', db, '--out', tree)).code).toBe(0);
    const again = await isoatlas('build', '--db', db, '--out', tree);
    expect(again.code).toBe(2);
    expect(again.stderr).toContain('holds a tree from an earlier build: pass --force to replace it');
    expect((await isoatlas('build', '--db', db, '--out', tree, '--force')).code).toBe(0);
    writeFileSync(join(tree, 'api/v1/mine.txt'), 'not rendered');
    const foreign = await isoatlas('build', '--db', db, '--out', tree, '--force');
    expect(foreign.code).toBe(2);
    expect(foreign.stderr).toContain('1 file(s) its manifest does not list, e.g. api/v1/mine.txt');
    expect(readFileSync(join(tree, 'api/v1/mine.txt'), 'utf8')).toBe('not rendered');
  });
});

describe('compressed inputs cut short', () => {
  // The first half of the gene-info extract: gzip that ends in the middle of its stream.
  let truncated: string;
  beforeAll(() => {
    const whole = readFileSync(join(ROOT, 'data/gene-info/org.Hs.eg.db.chr22.tsv.gz'));
    truncated = join(dir, 'gene-info.tsv.gz');
    writeFileSync(truncated, whole.subarray(0, Math.floor(whole.length / 2)));
  });

  it('import gene-info on a truncated .gz exits 3 naming the file, and leaves the release as it was', async () => {
    const db = join(dir, 'gene-info.sqlite');
    copyFileSync(inject('fixtureDb'), db);
    const before = readFileSync(db);
    const r = await isoatlas('import', 'gene-info', '--db', db, '--file', truncated, '--source', 'test');
    expect(r.stderr).toMatch(
      new RegExp(
        `^isoatlas: invalid input: ${truncated.replace(/[.\\/]/g, '\\$&')}:\\d+: not valid gzip data \\(truncated or corrupt file\\?\\)\\n$`,
      ),
    );
    expect(r.code).toBe(3);
    expect(readFileSync(db).equals(before)).toBe(true);
  });

  it('a reader that stops early (a header read) closes the file and hears no late error', async () => {
    const { readLines } = await import('../build/import/input.js');
    const uncaught: unknown[] = [];
    const hear = (err: unknown) => void uncaught.push(err);
    process.on('uncaughtException', hear);
    /** Descriptors of this process open on the file. */
    const openOnFile = () =>
      readdirSync('/proc/self/fd').filter((fd) => {
        try {
          return readlinkSync(`/proc/self/fd/${fd}`) === truncated;
        } catch {
          return false; // closed meanwhile
        }
      }).length;
    try {
      for (let i = 0; i < 20; i++) {
        for await (const [line] of readLines(truncated)) if (line === 1) break;
      }
      // Closing is asynchronous: wait for it (bounded), then for any error that would follow.
      for (let i = 0; i < 100 && openOnFile() > 0; i++) await new Promise((ok) => setTimeout(ok, 20));
      await new Promise((ok) => setTimeout(ok, 100));
      expect(openOnFile()).toBe(0);
      expect(uncaught).toEqual([]);
    } finally {
      process.off('uncaughtException', hear);
    }
  });
});
