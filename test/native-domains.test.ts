// Native domain importers (build/import/native/domains.ts) on real upstream samples: HMMER hmmscan
// --domtblout against Pfam-A (TransDecoder example) and TED consensus/per-method choppings
// (psipred/ted-tools example output). Provenance: test/fixtures/native/domains/README.md.
import { describe, it, expect, beforeAll, afterAll } from 'vitest';
import { miniRelease } from './helpers/mini-release.js';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { InputError } from '../build/import/input.js';
import { importTrack, insertTrack } from '../build/import/tracks.js';
import {
  mapDomains,
  parseDomtblout,
  parseTedChopping,
  parseTedConsensus,
  readIdMapping,
  releaseProteins,
} from '../build/import/native/domains.js';

const FIX = fileURLToPath(new URL('./fixtures/native/domains', import.meta.url));
const DOMTBL = join(FIX, 'transdecoder_cufflinks_example_pfam.domtblout');
const CONSENSUS = join(FIX, 'ted_consensus_example.tsv');
const chopping = (m: string) => join(FIX, `ted_chopping_${m}.txt`);

let tmp: string;
beforeAll(() => {
  tmp = mkdtempSync(join(tmpdir(), 'native-domains-'));
});
afterAll(() => rmSync(tmp, { recursive: true, force: true }));

/** Expects `work` to reject with an InputError and returns it. */
async function inputError(work: () => Promise<unknown>): Promise<InputError> {
  let caught: unknown;
  try {
    await work();
  } catch (err) {
    caught = err;
  }
  expect(caught).toBeInstanceOf(InputError);
  return caught as InputError;
}

/** The hit rows of the sample, split independently of the parser. */
const domtblLines = readFileSync(DOMTBL, 'utf8').split('\n');
const hitRows = domtblLines
  .map((text, i) => ({ line: i + 1, text }))
  .filter(({ text }) => text.trim() !== '' && !text.startsWith('#'));

describe('parseDomtblout (HMMER hmmscan --domtblout, Pfam-A)', () => {
  it('counts every hit row and applies the documented i-Evalue filter (default 1e-5)', async () => {
    expect(hitRows).toHaveLength(237); // as the samples README says
    const passing = hitRows.filter(({ text }) => Number(text.trim().split(/\s+/)[12]) <= 1e-5);
    const result = await parseDomtblout(DOMTBL);
    expect(result.total).toBe(237);
    expect(result.rows).toHaveLength(passing.length);
    expect(result.filtered).toBe(237 - passing.length);
    expect(result.rows.map((r) => r.line)).toEqual(passing.map((r) => r.line));
    expect(result.rows.every((r) => r.record.evalue! <= 1e-5)).toBe(true);
    expect(passing.length).toBe(103);
    // the threshold is a real knob
    const loose = await parseDomtblout(DOMTBL, { maxIEvalue: Infinity });
    expect(loose.rows).toHaveLength(237);
    expect(loose.filtered).toBe(0);
    const strict = await parseDomtblout(DOMTBL, { maxIEvalue: 1e-40 });
    expect(strict.rows.length).toBe(hitRows.filter(({ text }) => Number(text.trim().split(/\s+/)[12]) <= 1e-40).length);
    expect(strict.rows.length).toBeLessThan(103);
  });

  it('parses the first hit row to the exact fields (envelope by default, alignment on request)', async () => {
    const { rows } = await parseDomtblout(DOMTBL);
    const first = hitRows[0];
    expect(first.text.startsWith('Na_H_Exchanger       PF00999.18')).toBe(true);
    expect(rows[0]).toEqual({
      file: DOMTBL,
      line: first.line,
      record: {
        query: 'Gene.2::CUFF.13.2::g.2::m.2',
        source: 'pfam',
        accession: 'PF00999',
        accession_versioned: 'PF00999.18',
        name: 'Na_H_Exchanger',
        start: 83,
        end: 291,
        segments: [[83, 291]],
        score: 138.5,
        score_kind: 'bit_score',
        evalue: 2.3e-40,
        description: 'Sodium/hydrogen exchanger family',
        protein_length: 291,
        domain_number: 1,
        domain_of: 1,
      },
    });
    // A row where envelope and alignment differ: Dak1 on Gene.10 (ali 75-202, env 74-204).
    const envelope = rows.find((r) => r.record.name === 'Dak1')!.record;
    expect([envelope.start, envelope.end]).toEqual([74, 204]);
    const alignment = (await parseDomtblout(DOMTBL, { coordinates: 'alignment' })).rows.find(
      (r) => r.record.name === 'Dak1',
    )!.record;
    expect([alignment.start, alignment.end, alignment.segments]).toEqual([75, 202, [[75, 202]]]);
  });

  it('keeps descriptions with spaces out of the 22 fields', async () => {
    const { rows } = await parseDomtblout(DOMTBL, { maxIEvalue: Infinity });
    const oxidored = rows.find((r) => r.record.name === 'Oxidored_FMN')!.record;
    expect(oxidored.description).toBe('NADH:flavin oxidoreductase / NADH oxidase family');
    expect(oxidored).toMatchObject({
      accession: 'PF00724',
      start: 12,
      end: 360,
      score: 453,
      evalue: 6.2e-136,
      query: 'Gene.11::CUFF.52.1::g.11::m.11',
    });
    // every description equals the text after the 22nd field, and every accession is unversioned Pfam
    for (const { record, line } of rows) {
      const tokens = domtblLines[line! - 1].trim().split(/\s+/);
      expect(record.description).toBe(tokens.slice(22).join(' '));
      expect(record.accession).toMatch(/^PF\d{5}$/);
      expect(record.accession_versioned).toBe(tokens[1]);
      expect(record.score).toBe(Number(tokens[13]));
    }
  });

  it('recognises the # Program: trailer and lets it decide hmmscan vs hmmsearch', async () => {
    const result = await parseDomtblout(DOMTBL);
    expect(result.program).toBe('hmmscan');
    expect(result.programFrom).toBe('trailer');
    const trailerLine = domtblLines.findIndex((l) => l.startsWith('# Program:')) + 1;
    const err = await inputError(() => parseDomtblout(DOMTBL, { program: 'hmmsearch' }));
    expect(err.line).toBe(trailerLine);
    expect(err.message).toContain('hmmscan');

    // Without the trailer, the option decides: as hmmsearch the same columns are read swapped.
    const noTrailer = join(tmp, 'no-trailer.domtblout');
    writeFileSync(noTrailer, domtblLines.filter((l) => !l.startsWith('# Program:')).join('\n'));
    const asScan = await parseDomtblout(noTrailer);
    expect(asScan.programFrom).toBe('default');
    expect(asScan.rows).toHaveLength(103);
    // Read as hmmsearch, the columns swap: the 3rd column (tlen, here the Pfam model length) is
    // then the protein length, and envelopes beyond it are caught (PsbN: tlen 43, env to 136).
    const wrong = await inputError(() => parseDomtblout(noTrailer, { program: 'hmmsearch' }));
    expect(wrong.message).toMatch(/beyond the protein length 43 \(tlen\)/);

    // A real hmmsearch layout (target = protein, query = family), recognised from its trailer.
    const t = hitRows[0].text.trim().split(/\s+/);
    const swapped = [...t.slice(3, 6), ...t.slice(0, 3), ...t.slice(6, 22), 'Sodium/hydrogen exchanger family'].join(
      ' ',
    );
    const search = join(tmp, 'hmmsearch.domtblout');
    writeFileSync(search, `# target name ...\n${swapped}\n#\n# Program:         hmmsearch\n# [ok]\n`);
    const asSearch = await parseDomtblout(search);
    expect([asSearch.program, asSearch.programFrom, asSearch.total]).toEqual(['hmmsearch', 'trailer', 1]);
    expect(asSearch.rows[0].record).toMatchObject({
      query: 'Gene.2::CUFF.13.2::g.2::m.2',
      name: 'Na_H_Exchanger',
      accession: 'PF00999',
      accession_versioned: 'PF00999.18',
      start: 83,
      end: 291,
      protein_length: 291,
    });
  });

  it('rejects a row cut to 10 fields, naming the file and the line', async () => {
    const lines = [...domtblLines];
    const victim = hitRows[5].line; // a hit row in the middle of the file
    lines[victim - 1] = lines[victim - 1].trim().split(/\s+/).slice(0, 10).join(' ');
    const bad = join(tmp, 'cut.domtblout');
    writeFileSync(bad, lines.join('\n'));
    const err = await inputError(() => parseDomtblout(bad));
    expect(err.file).toBe(bad);
    expect(err.line).toBe(victim);
    expect(err.message).toContain(`${bad}:${victim}`);
    expect(err.message).toMatch(/found 10/);
    expect(err.column).toBe('dom of'); // the 11th field, the first one missing
  });

  it('rejects non-numeric coordinates, naming the field', async () => {
    const lines = [...domtblLines];
    const victim = hitRows[0].line;
    const t = lines[victim - 1].trim().split(/\s+/);
    t[19] = 'x83';
    lines[victim - 1] = t.join(' ');
    const bad = join(tmp, 'nonnumeric.domtblout');
    writeFileSync(bad, lines.join('\n'));
    const err = await inputError(() => parseDomtblout(bad));
    expect([err.line, err.column]).toEqual([victim, 'env from']);
  });
});

describe('TED', () => {
  const consensusRows = readFileSync(CONSENSUS, 'utf8')
    .trim()
    .split('\n')
    .map((l) => l.split('\t'));

  it('consensus: domain counts per level equal the #high/#medium/#low columns for the 5 models', async () => {
    expect(consensusRows).toHaveLength(5);
    const all = await parseTedConsensus(CONSENSUS, { levels: ['high', 'medium', 'low'] });
    const byDefault = await parseTedConsensus(CONSENSUS);
    for (const f of consensusRows) {
      const model = f[0];
      for (const [i, level] of (['high', 'medium', 'low'] as const).entries()) {
        const n = all.filter((r) => r.record.query === model && r.record.name === `consensus:${level}`).length;
        expect(n, `${model} ${level}`).toBe(Number(f[3 + i]));
      }
      const mine = byDefault.filter((r) => r.record.query === model);
      expect(mine).toHaveLength(Number(f[3]) + Number(f[4]));
      // accessions numbered 01… in order of first residue
      expect(mine.map((r) => r.record.accession)).toEqual(
        mine.map((_, i) => `${model}_TED${String(i + 1).padStart(2, '0')}`),
      );
      const starts = mine.map((r) => r.record.start);
      expect(starts).toEqual([...starts].sort((a, b) => a - b));
      for (const r of mine) {
        expect(r.record).toMatchObject({ source: 'ted', score: null, evalue: null });
        expect(r.record.end).toBeLessThanOrEqual(Number(f[2]));
      }
    }
    expect(byDefault).toHaveLength(10); // 2 high + 8 medium
    expect(all).toHaveLength(33); // + 23 low
    expect(byDefault.every((r) => r.record.name !== 'consensus:low')).toBe(true);
  });

  it('a discontinuous domain keeps its segments; start = first start, end = last end', async () => {
    const rows = await parseTedConsensus(CONSENSUS);
    const d = rows.find((r) => r.record.query === 'AF-A0A0N5ATQ5-F1-model_v4')!;
    expect(d.record).toMatchObject({
      accession: 'AF-A0A0N5ATQ5-F1-model_v4_TED01',
      name: 'consensus:medium',
      start: 17,
      end: 471,
      segments: [
        [17, 184],
        [191, 471],
      ],
    });
    expect(d.line).toBe(1);
    const four = rows.find((r) => r.record.query === 'AF-A0A1V6M2Y0-F1-model_v4' && r.record.segments.length > 1)!;
    expect(four.record.segments).toEqual([
      [97, 134],
      [198, 301],
      [350, 375],
      [401, 422],
    ]);
    // high and medium are numbered together by first residue: high 1179-1270 comes third
    expect(
      rows
        .filter((r) => r.record.query === 'AF-A0A1V6M2Y0-F1-model_v4')
        .map((r) => [r.record.accession.slice(-5), r.record.name]),
    ).toEqual([
      ['TED01', 'consensus:medium'],
      ['TED02', 'consensus:medium'],
      ['TED03', 'consensus:high'],
    ]);
  });

  it('per-method chopping files parse with their scores and ndom', async () => {
    for (const [method, total] of [
      ['chainsaw', 11],
      ['merizo', 14],
      ['unidoc', 20],
    ] as const) {
      const file = chopping(method);
      const rows = await parseTedChopping(file, method);
      const lines = readFileSync(file, 'utf8')
        .trim()
        .split('\n')
        .map((l) => l.split('\t'));
      expect(rows).toHaveLength(lines.reduce((s, f) => s + Number(f[3]), 0));
      expect(rows).toHaveLength(total);
      for (const f of lines) {
        const mine = rows.filter((r) => r.record.query === f[0]);
        expect(mine).toHaveLength(Number(f[3]));
        for (const r of mine)
          expect(r.record).toMatchObject({
            name: method,
            source: 'ted',
            score: Number(f[5]),
            score_kind: method === 'chainsaw' ? 'uncertainty' : 'confidence',
            evalue: null,
          });
      }
    }
    const chainsaw = await parseTedChopping(chopping('chainsaw'), 'chainsaw');
    expect(
      chainsaw.find((r) => r.record.query === 'AF-A0A1V6M2Y0-F1-model_v4' && r.record.segments.length === 2)!.record,
    ).toMatchObject({
      start: 201,
      end: 419,
      segments: [
        [201, 314],
        [351, 419],
      ],
      score: 0.0444,
      accession: 'AF-A0A1V6M2Y0-F1-model_v4_chainsaw_D02',
    });
    const unidoc = await parseTedChopping(chopping('unidoc'), 'unidoc');
    expect(
      unidoc.find((r) => r.record.query === 'AF-A0A6C0L9V9-F1-model_v4' && r.record.start === 137)!.record.segments,
    ).toEqual([
      [137, 179],
      [383, 421],
    ]);
  });

  it('rejects a consensus row whose count column disagrees with its chopping, naming the line', async () => {
    const lines = readFileSync(CONSENSUS, 'utf8').split('\n');
    const f = lines[2].split('\t'); // AF-A0A6C0L9V9: #high 1
    f[3] = '2';
    lines[2] = f.join('\t');
    const bad = join(tmp, 'consensus-bad-count.tsv');
    writeFileSync(bad, lines.join('\n'));
    const err = await inputError(() => parseTedConsensus(bad));
    expect([err.file, err.line, err.column]).toEqual([bad, 3, '#high']);
    expect(err.message).toContain(`${bad}:3`);
  });

  it('rejects segments beyond nres and an ndom mismatch in a chopping file', async () => {
    const lines = readFileSync(CONSENSUS, 'utf8').split('\n');
    const f = lines[0].split('\t'); // nres 502
    f[2] = '400';
    lines[0] = f.join('\t');
    const bad = join(tmp, 'consensus-nres.tsv');
    writeFileSync(bad, lines.join('\n'));
    const err = await inputError(() => parseTedConsensus(bad));
    expect([err.line, err.column]).toEqual([1, 'medium chopping']);

    const clines = readFileSync(chopping('merizo'), 'utf8').split('\n');
    clines[1] = clines[1].replace('\t3\t', '\t4\t');
    const cbad = join(tmp, 'merizo-bad.txt');
    writeFileSync(cbad, clines.join('\n'));
    const cerr = await inputError(() => parseTedChopping(cbad, 'merizo'));
    expect([cerr.line, cerr.column]).toEqual([2, 'ndom']);
  });
});

describe('mapping to isoforms and insertTrack', () => {
  const releaseDb = (lengths: Record<string, number>) =>
    miniRelease(Object.fromEntries(Object.entries(lengths).map(([id, len]) => [id, 'M'.padEnd(len, 'A')])));

  it('maps domtblout queries and a TED model to release transcripts and inserts them as real', async () => {
    // Gene.3 is itself a "transcript id" of this release (maps to itself); Gene.2, Gene.11 and the TED
    // model go through the mapping file; everything else is unmapped.
    const db = releaseDb({
      'ENST00000000002.1': 291,
      'ENST00000000011.1': 393,
      'ENST00000000100.1': 421,
      'Gene.3::CUFF.13.3::g.3::m.3': 194,
    });
    const mapFile = join(tmp, 'ids.tsv');
    writeFileSync(
      mapFile,
      [
        'id\ttranscript_id',
        'Gene.2::CUFF.13.2::g.2::m.2\tENST00000000002.1',
        'Gene.11::CUFF.52.1::g.11::m.11\tENST00000000011.1',
        'AF-A0A6C0L9V9-F1-model_v4\tENST00000000100.1',
      ].join('\n') + '\n',
    );
    const mapping = await readIdMapping(mapFile);
    expect(mapping.size).toBe(3);
    const proteins = releaseProteins(db);
    expect(proteins.size).toBe(4);

    const pfam = await parseDomtblout(DOMTBL);
    const { located, unmapped } = mapDomains(pfam.rows, mapping, proteins);
    const queries = new Set(pfam.rows.map((r) => r.record.query));
    expect(unmapped).toHaveLength(queries.size - 3);
    expect(unmapped).not.toContain('Gene.3::CUFF.13.3::g.3::m.3');
    const expected = pfam.rows.filter((r) =>
      ['Gene.2::CUFF.13.2::g.2::m.2', 'Gene.11::CUFF.52.1::g.11::m.11', 'Gene.3::CUFF.13.3::g.3::m.3'].includes(
        r.record.query,
      ),
    );
    expect(located).toHaveLength(expected.length);
    expect(located.length).toBeGreaterThanOrEqual(3);
    expect(located[0]).toEqual({
      file: DOMTBL,
      line: pfam.rows[0].line,
      record: {
        transcript_id: 'ENST00000000002.1',
        source: 'pfam',
        accession: 'PF00999',
        name: 'Na_H_Exchanger',
        start: 83,
        end: 291,
        segments: [[83, 291]],
        score: 138.5,
        score_kind: 'bit_score',
        evalue: 2.3e-40,
      },
    });

    const n = await insertTrack(
      db,
      { track: 'domains', file: DOMTBL, source: 'Pfam-A (hmmscan)', generated: false },
      located,
    );
    expect(n).toBe(located.length);

    const ted = mapDomains(await parseTedConsensus(CONSENSUS), mapping, proteins);
    expect(ted.unmapped).toHaveLength(4);
    expect(ted.located).toHaveLength(2);
    await insertTrack(
      db,
      { track: 'domains', file: CONSENSUS, source: 'TED consensus', generated: false },
      ted.located,
    );

    const rows = db
      .prepare(
        'SELECT transcript_id, source, accession, name, start, end, segments, score, evalue, provenance FROM domains ORDER BY id',
      )
      .all() as Record<string, unknown>[];
    expect(rows).toHaveLength(located.length + 2);
    expect(rows.every((r) => r.provenance === 'real')).toBe(true);
    expect(rows[0]).toEqual({
      transcript_id: 'ENST00000000002.1',
      source: 'pfam',
      accession: 'PF00999',
      name: 'Na_H_Exchanger',
      start: 83,
      end: 291,
      segments: '[[83,291]]',
      score: 138.5,
      evalue: 2.3e-40,
      provenance: 'real',
    });
    expect(rows.filter((r) => r.transcript_id === 'Gene.3::CUFF.13.3::g.3::m.3').map((r) => r.name)).toContain(
      'Na_H_Exchanger',
    );
    expect(rows.filter((r) => r.source === 'ted')).toEqual([
      {
        transcript_id: 'ENST00000000100.1',
        source: 'ted',
        accession: 'AF-A0A6C0L9V9-F1-model_v4_TED01',
        name: 'consensus:high',
        start: 30,
        end: 136,
        segments: '[[30,136]]',
        score: null,
        evalue: null,
        provenance: 'real',
      },
      {
        transcript_id: 'ENST00000000100.1',
        source: 'ted',
        accession: 'AF-A0A6C0L9V9-F1-model_v4_TED02',
        name: 'consensus:medium',
        start: 144,
        end: 421,
        segments: '[[144,421]]',
        score: null,
        evalue: null,
        provenance: 'real',
      },
    ]);
    const sources = db
      .prepare('SELECT track, source, generated, input_file, records FROM track_sources ORDER BY source')
      .all();
    expect(sources).toEqual([
      {
        track: 'domains',
        source: 'Pfam-A (hmmscan)',
        generated: 0,
        input_file: 'transdecoder_cufflinks_example_pfam.domtblout',
        records: located.length,
      },
      { track: 'domains', source: 'TED consensus', generated: 0, input_file: 'ted_consensus_example.tsv', records: 2 },
    ]);
    db.close();
  });

  it('a domain beyond the protein end is an InputError from insertTrack, and nothing is inserted', async () => {
    // the isoform's protein is shorter (250 aa) than the HMMER query (291 aa; Na_H_Exchanger env 83-291)
    const db = releaseDb({ 'ENST00000000002.1': 250 });
    const pfam = await parseDomtblout(DOMTBL);
    const { located } = mapDomains(pfam.rows, new Map([['Gene.2::CUFF.13.2::g.2::m.2', 'ENST00000000002.1']]));
    expect(located.length).toBeGreaterThan(0);
    const err = await inputError(() =>
      insertTrack(db, { track: 'domains', file: DOMTBL, source: 'Pfam-A (hmmscan)', generated: false }, located),
    );
    expect([err.file, err.line, err.column]).toEqual([DOMTBL, pfam.rows[0].line, 'end']);
    expect(err.message).toContain('beyond the end');
    expect(db.prepare('SELECT count(*) AS n FROM domains').get()).toEqual({ n: 0 });
    expect(db.prepare('SELECT count(*) AS n FROM track_sources').get()).toEqual({ n: 0 });
    db.close();
  });

  it('an unmapped id is listed, not an error; without proteins, ids only map through the mapping', async () => {
    const rows = await parseTedChopping(chopping('merizo'), 'merizo');
    const { located, unmapped } = mapDomains(rows, new Map([['AF-A0A6C0LIE9-F1-model_v4', 'ENST00000000009.1']]));
    expect(located.map((l) => l.record.transcript_id)).toEqual(['ENST00000000009.1', 'ENST00000000009.1']);
    expect(unmapped).toEqual([
      'AF-A0A0N5ATQ5-F1-model_v4',
      'AF-A0A1V6M2Y0-F1-model_v4',
      'AF-A0A1X0B8H0-F1-model_v4',
      'AF-A0A6C0L9V9-F1-model_v4',
    ]);
  });

  it('readIdMapping rejects an id mapped to two transcripts', async () => {
    const f = join(tmp, 'dup.tsv');
    writeFileSync(f, 'a\tENST1.1\nb\tENST2.1\na\tENST3.1\n');
    const err = await inputError(() => readIdMapping(f));
    expect([err.file, err.line]).toEqual([f, 3]);
  });
});

describe('what a domain score measures', () => {
  it('a TED score in a track TSV needs its kind; each kind is served in its own field', async () => {
    const dir = mkdtempSync(join(tmpdir(), 'isoatlas-score-kind-'));
    try {
      const db = miniRelease({ 'ENST00000000001.1': 'M'.repeat(300) });
      const head = 'transcript_id\tsource\taccession\tstart\tend\tscore\tscore_kind\n';
      const bad = join(dir, 'bad.tsv');
      writeFileSync(bad, `${head}ENST00000000001.1\tted\tT1\t10\t100\t0.3\t\n`);
      const err = await importTrack(db, { track: 'domains', file: bad, source: 'TED', generated: false }).catch(
        (e) => e,
      );
      expect(err).toBeInstanceOf(InputError);
      expect([err.line, err.column]).toEqual([2, 'score_kind']);
      const good = join(dir, 'good.tsv');
      writeFileSync(
        good,
        `${head}ENST00000000001.1\tted\tT1\t10\t100\t0.3\tuncertainty\nENST00000000001.1\tpfam\tPF00001\t120\t200\t55.1\t\n`,
      );
      await importTrack(db, { track: 'domains', file: good, source: 'TED', generated: false });
      expect(db.prepare('SELECT accession, score, score_kind FROM domains ORDER BY start').all()).toEqual([
        { accession: 'T1', score: 0.3, score_kind: 'uncertainty' },
        { accession: 'PF00001', score: 55.1, score_kind: 'bit_score' },
      ]);
      await expect(parseTedChopping(bad, 'deepdom')).rejects.toThrow(
        /unknown TED method "deepdom".*chainsaw, merizo, unidoc/,
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
