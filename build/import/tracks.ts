// Annotation tracks: typed records, read from the documented plain TSV format of each track
// (data/README.md) or from a tool's native output (build/import/native/), then validated against the
// release and inserted by one path. Strict: unknown transcripts, non-coding isoforms, positions
// beyond the protein and PTM residues that are not there are errors naming the file and line. One
// input is one transaction; every record carries the input's provenance (real or generated).
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, resolve } from 'node:path';
import { InputError, cellParsers, readTsv, sha256File } from './input.js';
import { TRACK_TABLES, type Track } from '../release-db/schema.js';
import type { Db } from '../release-db/database.js';
import { parseStructureModel } from './native/structures.js';

export interface TrackInput {
  track: Track;
  file: string;
  source: string;
  version?: string;
  description?: string;
  generated: boolean;
  /** Replace what an earlier import of an input of the same file name added to this track. */
  replace?: boolean;
  /** Record an input that gives no records (refused otherwise). */
  allowEmpty?: boolean;
}

export interface DomainRecord {
  transcript_id: string;
  source: 'pfam' | 'ted';
  accession: string;
  name: string | null;
  start: number;
  end: number;
  segments: [number, number][];
  score: number | null;
  /** What `score` measures: HMMER's bit score (higher is better), a TED method's boundary
   * uncertainty (Chainsaw: lower is better) or confidence (Merizo, UniDoc: higher is better). */
  score_kind: ScoreKind | null;
  evalue: number | null;
}
export const SCORE_KINDS = ['bit_score', 'uncertainty', 'confidence'] as const;
export type ScoreKind = (typeof SCORE_KINDS)[number];
export interface NeoantigenRecord {
  transcript_id: string;
  peptide: string;
  allele: string;
  affinity_nm: number | null;
  percentile_rank: number | null;
  start: number;
}
export interface PtmRecord {
  transcript_id: string;
  position: number;
  residue: string;
  modification: string;
  source: string | null;
}
export interface StructureRecord {
  transcript_id: string;
  model_source: string;
  mean_plddt: number;
  mmcif: Buffer | null;
  /** Per-residue pLDDT of protein positions start, start+1, … (kept for the domain track). */
  plddt_residues: { start: number; values: number[] } | null;
}
export interface TrackRecords {
  domains: DomainRecord;
  neoantigens: NeoantigenRecord;
  ptm: PtmRecord;
  structures: StructureRecord;
}

/** A record and where it came from, for error messages. */
export interface Located<T> {
  record: T;
  file: string;
  line: number | null;
}

export const TRACK_COLUMNS: Record<Track, { required: string[]; optional: string[] }> = {
  domains: {
    required: ['transcript_id', 'source', 'accession', 'start', 'end'],
    optional: ['name', 'segments', 'score', 'score_kind', 'evalue'],
  },
  neoantigens: {
    required: ['transcript_id', 'peptide', 'allele', 'start'],
    optional: ['affinity_nm', 'percentile_rank'],
  },
  ptm: { required: ['transcript_id', 'position', 'residue', 'modification'], optional: ['source'] },
  structures: { required: ['transcript_id', 'model_file', 'mean_plddt', 'model_source'], optional: [] },
};

/** `12-80` or `12-80_95-130` → [[12, 80], [95, 130]], ascending and non-overlapping. */
export function parseSegments(text: string, fail: (problem: string) => never): [number, number][] {
  const segments = text.split('_').map((part) => {
    const m = /^(\d+)-(\d+)$/.exec(part);
    if (!m) fail(`segment "${part}" is not start-end`);
    const s = Number(m![1]);
    const e = Number(m![2]);
    if (s < 1 || e < s) fail(`segment ${part} is not a 1-based interval with start ≤ end`);
    return [s, e] as [number, number];
  });
  segments.forEach(([s], i) => {
    if (i > 0 && s <= segments[i - 1][1]) fail(`segments "${text}" overlap or are not in ascending order`);
  });
  return segments;
}

/** A `model_file` that is an http(s) URL names a model hosted elsewhere: the structure is recorded
 * by path only (no mmCIF bytes, no per-residue pLDDT). The edge redirects structure requests to
 * `<structure base>/structures/<transcript_id>.cif`, so the URL must end in that path. */
const MODEL_URL = /^https?:\/\//;

/** The records of a track TSV one at a time, so a file of millions of rows is never held whole. */
export async function* iterateTrackTsv<T extends Track>(
  track: T,
  file: string,
): AsyncGenerator<Located<TrackRecords[T]>> {
  const columns = TRACK_COLUMNS[track];
  for await (const { line, row } of readTsv(file, {
    required: columns.required,
    allowed: [...columns.required, ...columns.optional],
  })) {
    const p = cellParsers(file, line);
    const transcript_id = p.text('transcript_id', row.transcript_id)!;
    let record: TrackRecords[Track];
    if (track === 'domains') {
      const source = row.source;
      if (source !== 'pfam' && source !== 'ted') p.fail('source', `expected pfam or ted, found "${source}"`);
      const start = p.int('start', row.start, { min: 1 })!;
      const end = p.int('end', row.end, { min: 1 })!;
      if (end < start) p.fail('end', `end ${end} is before start ${start}`);
      const segments = row.segments
        ? parseSegments(row.segments, (problem) => p.fail('segments', problem))
        : [[start, end] as [number, number]];
      if (segments[0][0] !== start || segments[segments.length - 1][1] !== end)
        p.fail('segments', `segments ${row.segments} do not span start-end ${start}-${end}`);
      const score = p.num('score', row.score ?? '', { nullable: true });
      // A Pfam score is HMMER's bit score; a TED score means what its method says, so it must say.
      const kind =
        p.text('score_kind', row.score_kind ?? '', { nullable: true }) ??
        (score !== null && source === 'pfam' ? 'bit_score' : null);
      if (kind !== null && !(SCORE_KINDS as readonly string[]).includes(kind))
        p.fail('score_kind', `expected ${SCORE_KINDS.join(', ')}, found "${kind}"`);
      if (score !== null && kind === null)
        p.fail(
          'score_kind',
          'a TED score needs its kind: uncertainty (Chainsaw: lower is better) or confidence (Merizo, UniDoc: higher is better)',
        );
      record = {
        transcript_id,
        source: source as 'pfam' | 'ted',
        accession: p.text('accession', row.accession)!,
        name: p.text('name', row.name ?? '', { nullable: true }),
        start,
        end,
        segments,
        score,
        score_kind: score === null ? null : (kind as ScoreKind),
        evalue: p.num('evalue', row.evalue ?? '', { min: 0, nullable: true }),
      };
    } else if (track === 'neoantigens') {
      record = {
        transcript_id,
        peptide: p.text('peptide', row.peptide)!.toUpperCase(),
        allele: p.text('allele', row.allele)!,
        start: p.int('start', row.start, { min: 1 })!,
        affinity_nm: p.num('affinity_nm', row.affinity_nm ?? '', { min: 0, nullable: true }),
        percentile_rank: p.num('percentile_rank', row.percentile_rank ?? '', { min: 0, max: 100, nullable: true }),
      };
    } else if (track === 'ptm') {
      record = {
        transcript_id,
        position: p.int('position', row.position, { min: 1 })!,
        residue: p.text('residue', row.residue)!.toUpperCase(),
        modification: p.text('modification', row.modification)!,
        source: row.source || null,
      };
    } else if (MODEL_URL.test(row.model_file)) {
      let url: URL | null = null;
      try {
        url = new URL(row.model_file);
      } catch {
        p.fail('model_file', `"${row.model_file}" is not a valid URL`);
      }
      const expected = `/structures/${transcript_id}.cif`;
      if (!url!.pathname.endsWith(expected))
        p.fail(
          'model_file',
          `a model URL must end in ${expected}, where the edge redirects structure requests; found ${row.model_file}`,
        );
      record = {
        transcript_id,
        model_source: p.text('model_source', row.model_source)!,
        mean_plddt: p.num('mean_plddt', row.mean_plddt, { min: 0, max: 100 })!,
        mmcif: null,
        plddt_residues: null,
      };
    } else {
      const modelPath = resolve(dirname(file), p.text('model_file', row.model_file)!);
      let mmcif: Buffer;
      try {
        mmcif = readFileSync(modelPath);
      } catch {
        return p.fail('model_file', `cannot read model file ${modelPath}`);
      }
      // The model is read for its per-residue pLDDT too; a TSV model covers the isoform's protein from residue 1.
      const parsed = await parseStructureModel(modelPath);
      record = {
        transcript_id,
        model_source: p.text('model_source', row.model_source)!,
        mean_plddt: p.num('mean_plddt', row.mean_plddt, { min: 0, max: 100 })!,
        mmcif,
        plddt_residues: { start: 1, values: parsed.plddt },
      };
    }
    yield { record: record as TrackRecords[T], file, line };
  }
}

interface Protein {
  coding: number | null;
  protein_length: number | null;
  protein_sequence: string | null;
}

const INSERT_SQL: Record<Track, string> = {
  domains:
    'INSERT INTO domains (transcript_id, source, accession, name, start, end, segments, score, score_kind, evalue, provenance, input_file) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
  neoantigens:
    'INSERT INTO neoantigens (transcript_id, peptide, allele, affinity_nm, percentile_rank, start, provenance, input_file) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
  ptm: 'INSERT INTO ptm_sites (transcript_id, position, residue, modification, source, provenance, input_file) VALUES (?, ?, ?, ?, ?, ?, ?)',
  structures:
    'INSERT INTO structures (transcript_id, model_source, mean_plddt, mmcif, mmcif_sha256, plddt_residues, provenance, input_file) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
};

/** Removes what inputs added to a track: those of one input (by file name), or all of them. The
 * metrics follow (they are a view over these tables); a track with no input left counts null. */
export function removeTrackRecords(db: Db, track: Track, inputFile?: string): { records: number; inputs: string[] } {
  const inputs = (
    db
      .prepare('SELECT input_file FROM track_sources WHERE track = ? ORDER BY input_file')
      .pluck()
      .all(track) as string[]
  ).filter((f) => inputFile === undefined || f === inputFile);
  const table = TRACK_TABLES[track];
  let records = 0;
  for (const f of inputs) {
    records += db.prepare(`DELETE FROM ${table} WHERE input_file = ?`).run(f).changes;
    db.prepare('DELETE FROM track_sources WHERE track = ? AND input_file = ?').run(track, f);
  }
  return { records, inputs };
}

/** Validates records against the release and inserts them, with the input's provenance, in one
 * transaction that also records the input in track_sources. Records stream in (a file of millions
 * of rows is never held whole) and are inserted as they are validated; any problem rolls the whole
 * input back. The problem reported is the one the checks would meet in this order: a malformed row
 * anywhere in the input, then the first record that does not fit the release, then an input already
 * imported, then a structure the release already has. */
export async function insertTrack<T extends Track>(
  db: Db,
  input: TrackInput,
  located: Iterable<Located<TrackRecords[T]>> | AsyncIterable<Located<TrackRecords[T]>>,
): Promise<number> {
  const { track, file } = input;
  const proteinOf = db.prepare('SELECT coding, protein_length, protein_sequence FROM isoforms WHERE transcript_id = ?');
  const provenance = input.generated ? 'generated' : 'real';
  // Duplicates within this input are looked up among the rows it has inserted so far (ids above those
  // the table had when it began), not kept in memory: an input can have millions of rows.
  let firstNew = 0;
  const lastId = db.prepare(`SELECT coalesce(max(rowid), 0) FROM ${TRACK_TABLES[track]}`).pluck();
  const siteInserted =
    track === 'ptm'
      ? db.prepare('SELECT 1 FROM ptm_sites WHERE transcript_id = ? AND position = ? AND modification = ? AND id > ?')
      : null;
  const structureInserted =
    track === 'structures' ? db.prepare('SELECT 1 FROM structures WHERE transcript_id = ? AND rowid > ?') : null;
  const statement = db.prepare(INSERT_SQL[track]);
  const existing = track === 'structures' ? db.prepare('SELECT 1 FROM structures WHERE transcript_id = ?') : null;
  // Rows arrive grouped by isoform in practice: keep the last protein rather than look it up per row.
  let cached: { id: string; protein: Protein | undefined } | null = null;

  const validate = (record: TrackRecords[Track], from: string, line: number | null): unknown[] => {
    const fail = (column: string, problem: string): never => {
      throw new InputError(from, line, problem, column);
    };
    const id = record.transcript_id;
    if (cached?.id !== id) cached = { id, protein: proteinOf.get(id) as Protein | undefined };
    const protein = cached.protein;
    if (!protein) fail('transcript_id', `${id} is not an isoform of this release`);
    if (!protein!.coding || protein!.protein_length === null)
      fail('transcript_id', `${id} is not a coding isoform: it has no protein to annotate`);
    const length = protein!.protein_length!;
    const within = (column: string, pos: number) => {
      if (pos > length) fail(column, `position ${pos} is beyond the end of ${id}'s protein (${length} aa)`);
    };
    if (track === 'domains') {
      const r = record as DomainRecord;
      within('end', r.end);
      return [
        id,
        r.source,
        r.accession,
        r.name,
        r.start,
        r.end,
        JSON.stringify(r.segments),
        r.score,
        r.score === null ? null : r.score_kind,
        r.evalue,
        provenance,
      ];
    } else if (track === 'neoantigens') {
      const r = record as NeoantigenRecord;
      if (!/^[ACDEFGHIKLMNPQRSTVWYUX]+$/.test(r.peptide))
        fail('peptide', `"${r.peptide}" is not an amino-acid sequence`);
      within('start', r.start);
      if (r.affinity_nm === null && r.percentile_rank === null)
        fail('affinity_nm', 'a neoantigen needs an affinity or a percentile rank');
      return [id, r.peptide, r.allele, r.affinity_nm, r.percentile_rank, r.start, provenance];
    } else if (track === 'ptm') {
      const r = record as PtmRecord;
      within('position', r.position);
      const actual = protein!.protein_sequence?.[r.position - 1];
      if (actual !== undefined && actual !== r.residue)
        fail('residue', `${id} has ${actual} at position ${r.position}, not ${r.residue}`);
      if (siteInserted!.get(id, r.position, r.modification, firstNew))
        fail('position', `duplicate site ${id} ${r.residue}${r.position} ${r.modification}`);
      return [id, r.position, r.residue, r.modification, r.source ?? input.source, provenance];
    }
    const r = record as StructureRecord;
    if (structureInserted!.get(id, firstNew)) fail('transcript_id', `${id} has more than one structure`);
    if (r.plddt_residues && r.plddt_residues.start + r.plddt_residues.values.length - 1 > length) {
      fail(
        'transcript_id',
        `the model has ${r.plddt_residues.values.length} residues from position ${r.plddt_residues.start}, beyond ${id}'s protein (${length} aa)`,
      );
    }
    const sha = r.mmcif ? createHash('sha256').update(r.mmcif).digest('hex') : null;
    const residues = r.plddt_residues
      ? JSON.stringify({
          start: r.plddt_residues.start,
          values: r.plddt_residues.values.map((v) => Math.round(v * 100) / 100),
        })
      : null;
    return [id, r.model_source, r.mean_plddt, r.mmcif, sha, residues, provenance];
  };

  const inputName = basename(file);
  // Rolling back needs a journal; a release database being written has none (sqlite-settings.ts), so
  // keep one while this input is inserted: on file, as one in memory would hold every page a
  // replacement's deletions free and its inserts reuse.
  const journal = db.pragma('journal_mode', { simple: true }) as string;
  if (journal === 'off') db.pragma('journal_mode = DELETE');
  db.exec('SAVEPOINT insert_track');
  try {
    // Inside the savepoint: a replacement that fails leaves the earlier records in place.
    if (input.replace) removeTrackRecords(db, track, inputName);
    firstNew = lastId.get() as number;
    const already = db.prepare('SELECT 1 FROM track_sources WHERE track = ? AND input_file = ?').get(track, inputName);
    let misfit: InputError | null = null;
    let present: InputError | null = null;
    let n = 0;
    for await (const { record, file: from, line } of located) {
      if (misfit) continue; // keep reading: a malformed row later in the input is reported first
      let row: unknown[];
      try {
        row = validate(record, from, line);
      } catch (err) {
        if (!(err instanceof InputError)) throw err;
        misfit = err;
        continue;
      }
      if (existing && !present && existing.get(row[0]))
        present = new InputError(file, null, `${row[0]} already has a structure in this release`);
      statement.run(...row, inputName);
      n += 1;
    }
    if (misfit) throw misfit;
    // Nothing to import is more often a wrong or truncated file than an empty track on purpose.
    if (n === 0 && !input.allowEmpty)
      throw new InputError(
        file,
        null,
        `no ${track} records to import (no rows, or none left once filtered and mapped to this release); the release was not changed: pass --allow-empty if an empty track is meant`,
      );
    if (already)
      throw new InputError(
        file,
        null,
        `${inputName} was already imported as the ${track} track of this release: import it with --replace to replace those records, or remove them with \`isoatlas remove-track ${track} --input ${inputName}\``,
      );
    if (present) throw present;
    const sha = await sha256File(file);
    db.prepare(
      'INSERT INTO track_sources (track, source, version, generated, description, input_file, input_sha256, records) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ).run(
      track,
      input.source,
      input.version ?? null,
      input.generated ? 1 : 0,
      input.description ?? null,
      inputName,
      sha,
      n,
    );
    db.exec('RELEASE insert_track');
    return n;
  } catch (err) {
    db.exec('ROLLBACK TO insert_track');
    db.exec('RELEASE insert_track');
    throw err;
  } finally {
    if (journal === 'off') db.pragma('journal_mode = OFF');
  }
}

/** The documented TSV of a track, validated and inserted. */
export async function importTrack(db: Db, input: TrackInput): Promise<number> {
  return insertTrack(db, input, iterateTrackTsv(input.track, input.file));
}
