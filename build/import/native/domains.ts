// Native domain annotations: HMMER `--domtblout` (Pfam-A via hmmscan or hmmsearch) and TED domain
// choppings (the consensus file and the per-method chainsaw/merizo/unidoc files), read into
// transcript-less domain records keyed by the tool's own protein id (`query`), then mapped to the
// release's isoforms and handed to insertTrack (build/import/tracks.ts), which validates against the
// release. Errors name the file, the line and the field.
import { InputError, cellParsers, readLines } from '../input.js';
import { parseSegments, type DomainRecord, type Located, type ScoreKind } from '../tracks.js';
import { UsageError } from '../../common/errors.js';
import type { Db } from '../../release-db/database.js';

/** A domain record before it is attached to a release transcript. */
export type DomainRecordWithoutTranscript = Omit<DomainRecord, 'transcript_id'>;
/** A domain record keyed by the tool's protein id (domtblout query, TED model/chain id). */
export type DomainHit = DomainRecordWithoutTranscript & { query: string };

/** One Pfam hit from a domtblout row. `accession` is unversioned (PF00999); the versioned accession
 * as written by HMMER (PF00999.18) is kept in `accession_versioned`. */
export interface PfamHit extends DomainHit {
  accession_versioned: string;
  description: string;
  /** length of the protein the coordinates refer to (qlen for hmmscan, tlen for hmmsearch) */
  protein_length: number;
  domain_number: number;
  domain_of: number;
}

export interface DomtbloutOptions {
  /** Significance filter: keep domains with i-Evalue ≤ this (default 1e-5). The i-Evalue is the
   * independent per-domain E-value, the one Pfam's own gathering-free filters use per domain. */
  maxIEvalue?: number;
  /** Which coordinates become start/end: HMMER's envelope (env from/to, default) or the alignment
   * (ali from/to). Both are 1-based inclusive on the protein. */
  coordinates?: 'envelope' | 'alignment';
  /** hmmscan (target = Pfam family, query = protein; default) or hmmsearch (swapped). When the
   * file has a `# Program:` trailer it decides; an explicit option that contradicts it is an error. */
  program?: 'hmmscan' | 'hmmsearch';
}

export interface DomtbloutResult {
  rows: Located<PfamHit>[];
  /** hit rows removed by the i-Evalue filter */
  filtered: number;
  /** all hit rows in the file */
  total: number;
  /** the program the file was read as, and whether that came from the trailer */
  program: 'hmmscan' | 'hmmsearch';
  programFrom: 'trailer' | 'option' | 'default';
}

export const DOMTBLOUT_FIELDS = [
  'target name',
  'target accession',
  'tlen',
  'query name',
  'query accession',
  'qlen',
  'full E-value',
  'full score',
  'full bias',
  'dom #',
  'dom of',
  'c-Evalue',
  'i-Evalue',
  'dom score',
  'dom bias',
  'hmm from',
  'hmm to',
  'ali from',
  'ali to',
  'env from',
  'env to',
  'acc',
] as const;

interface RawRow {
  line: number;
  fields: string[];
  description: string;
}

/** Splits a domtblout row into its 22 fields and the free-text description (which may hold spaces). */
function splitDomtbloutRow(text: string): { fields: string[]; description: string } {
  const re = /\S+/g;
  const fields: string[] = [];
  let m: RegExpExecArray | null;
  while (fields.length < 22 && (m = re.exec(text)) !== null) fields.push(m[0]);
  return { fields, description: text.slice(re.lastIndex).trim() };
}

/** Reads HMMER `--domtblout` output (plain or .gz). */
export async function parseDomtblout(path: string, opts: DomtbloutOptions = {}): Promise<DomtbloutResult> {
  const maxIEvalue = opts.maxIEvalue ?? 1e-5;
  const coordinates = opts.coordinates ?? 'envelope';
  if (coordinates !== 'envelope' && coordinates !== 'alignment')
    throw new Error(`coordinates must be envelope or alignment, not ${String(coordinates)}`);
  const raw: RawRow[] = [];
  let trailer: { line: number; program: string } | null = null;
  for await (const [line, text] of readLines(path)) {
    if (text.trim() === '') continue;
    if (text.startsWith('#')) {
      const m = /^#\s*Program:\s*(\S+)/.exec(text);
      if (m) trailer = { line, program: m[1] };
      continue;
    }
    const { fields, description } = splitDomtbloutRow(text);
    if (fields.length < 22) {
      throw new InputError(
        path,
        line,
        `expected 22 whitespace-separated fields and a description, found ${fields.length} (missing "${DOMTBLOUT_FIELDS[fields.length]}")`,
        DOMTBLOUT_FIELDS[fields.length],
      );
    }
    raw.push({ line, fields, description });
  }

  let program: 'hmmscan' | 'hmmsearch' = opts.program ?? 'hmmscan';
  let programFrom: DomtbloutResult['programFrom'] = opts.program ? 'option' : 'default';
  if (trailer) {
    if (trailer.program !== 'hmmscan' && trailer.program !== 'hmmsearch') {
      throw new InputError(
        path,
        trailer.line,
        `the trailer says this is ${trailer.program} output; only hmmscan and hmmsearch --domtblout are supported`,
      );
    }
    if (opts.program && opts.program !== trailer.program) {
      throw new InputError(
        path,
        trailer.line,
        `read as ${opts.program} output, but the trailer says it was written by ${trailer.program}`,
      );
    }
    program = trailer.program;
    programFrom = 'trailer';
  }

  const rows: Located<PfamHit>[] = [];
  for (const { line, fields: f, description } of raw) {
    const p = cellParsers(path, line);
    const field = (i: number) => DOMTBLOUT_FIELDS[i];
    const int = (i: number) => p.int(field(i), f[i], { min: 1 })!;
    const num = (i: number, min?: number) => p.num(field(i), f[i], { min })!;
    const [family, familyAcc, proteinId, proteinLenIndex] = program === 'hmmscan' ? [0, 1, 3, 5] : [3, 4, 0, 2];
    const proteinLength = int(proteinLenIndex);
    int(program === 'hmmscan' ? 2 : 5); // model length: checked for shape only
    const iEvalue = num(12, 0);
    num(11, 0);
    num(6, 0);
    num(7);
    const score = num(13);
    const domainNumber = int(9);
    const domainOf = int(10);
    const [fromIndex, toIndex] = coordinates === 'envelope' ? [19, 20] : [17, 18];
    for (const i of [15, 16, 17, 18, 19, 20]) int(i);
    const start = int(fromIndex);
    const end = int(toIndex);
    if (end < start) p.fail(field(toIndex), `${field(toIndex)} ${end} is before ${field(fromIndex)} ${start}`);
    if (end > proteinLength)
      p.fail(
        field(toIndex),
        `${field(toIndex)} ${end} is beyond the protein length ${proteinLength} (${field(proteinLenIndex)})`,
      );
    const versioned = f[familyAcc];
    const name = f[family];
    const accession = versioned === '-' ? name : versioned.replace(/\.\d+$/, '');
    if (iEvalue > maxIEvalue) continue;
    rows.push({
      file: path,
      line,
      record: {
        query: f[proteinId],
        source: 'pfam',
        accession,
        accession_versioned: versioned,
        name,
        start,
        end,
        segments: [[start, end]],
        score,
        score_kind: 'bit_score',
        evalue: iEvalue,
        description,
        protein_length: proteinLength,
        domain_number: domainNumber,
        domain_of: domainOf,
      },
    });
  }
  return { rows, filtered: raw.length - rows.length, total: raw.length, program, programFrom };
}

// ---------------------------------------------------------------------------------------------
// TED

export type TedLevel = 'high' | 'medium' | 'low';
export const TED_LEVELS: readonly TedLevel[] = ['high', 'medium', 'low'];

/** A TED domain: `level` for consensus records, `method` for per-method choppings. */
export interface TedHit extends DomainHit {
  level?: TedLevel;
  method?: string;
  nres: number;
}

/** `102-135,202-315_352-420` → one segment list per domain; `na` → none. Each domain's segments
 * are ascending and within 1..nres. */
export function parseChopping(text: string, nres: number, fail: (problem: string) => never): [number, number][][] {
  if (text === 'na' || text === '') return [];
  return text.split(',').map((domain) => {
    const segments = parseSegments(domain, fail);
    const last = segments[segments.length - 1][1];
    if (last > nres) fail(`segment ending at ${last} in "${domain}" lies beyond nres ${nres}`);
    return segments;
  });
}

const two = (n: number) => String(n).padStart(2, '0');

function tedFields(path: string, line: number, text: string, expected: number, names: readonly string[]): string[] {
  const fields = text.split('\t');
  if (fields.length !== expected) {
    throw new InputError(
      path,
      line,
      `expected ${expected} tab-separated fields (${names.join(', ')}), found ${fields.length}`,
    );
  }
  return fields;
}

const CONSENSUS_FIELDS = [
  'model id',
  'md5',
  'nres',
  '#high',
  '#medium',
  '#low',
  'high chopping',
  'medium chopping',
  'low chopping',
] as const;

/** Reads the TED consensus file (headerless TSV). Domains of the selected levels (default high and
 * medium, as in the TED database) get accessions `<model id>_TED<NN>`, numbered 01… per model across
 * the selected levels in order of first residue. */
export async function parseTedConsensus(path: string, opts: { levels?: TedLevel[] } = {}): Promise<Located<TedHit>[]> {
  const levels = opts.levels ?? ['high', 'medium'];
  for (const l of levels) if (!TED_LEVELS.includes(l)) throw new Error(`unknown TED consensus level ${String(l)}`);
  const out: Located<TedHit>[] = [];
  const seen = new Set<string>();
  for await (const [line, text] of readLines(path)) {
    if (text.trim() === '' || text.startsWith('#')) continue;
    const f = tedFields(path, line, text, 9, CONSENSUS_FIELDS);
    const p = cellParsers(path, line);
    const model = p.text('model id', f[0])!;
    if (seen.has(model)) p.fail('model id', `${model} appears twice`);
    seen.add(model);
    const nres = p.int('nres', f[2], { min: 1 })!;
    const domains: { level: TedLevel; segments: [number, number][] }[] = [];
    TED_LEVELS.forEach((level, i) => {
      const count = p.int(CONSENSUS_FIELDS[3 + i], f[3 + i], { min: 0 })!;
      const column = CONSENSUS_FIELDS[6 + i];
      const parsed = parseChopping(f[6 + i], nres, (problem) => p.fail(column, problem));
      if (parsed.length !== count) {
        p.fail(
          CONSENSUS_FIELDS[3 + i],
          `${CONSENSUS_FIELDS[3 + i]} is ${count} but the ${column} "${f[6 + i]}" has ${parsed.length} domain(s)`,
        );
      }
      if (levels.includes(level)) for (const segments of parsed) domains.push({ level, segments });
    });
    domains
      .map((d, order) => ({ ...d, order }))
      .sort((a, b) => a.segments[0][0] - b.segments[0][0] || a.order - b.order)
      .forEach(({ level, segments }, i) => {
        const start = segments[0][0];
        const end = segments[segments.length - 1][1];
        out.push({
          file: path,
          line,
          record: {
            query: model,
            source: 'ted',
            accession: `${model}_TED${two(i + 1)}`,
            name: `consensus:${level}`,
            start,
            end,
            segments,
            score: null,
            score_kind: null,
            evalue: null,
            level,
            nres,
          },
        });
      });
  }
  return out;
}

const CHOPPING_FIELDS = ['chain id', 'md5', 'nres', 'ndom', 'chopping', 'score'] as const;

/** What each TED method's score measures (TED's per-method chopping files). */
export const TED_METHOD_SCORES: Record<string, ScoreKind> = {
  chainsaw: 'uncertainty',
  merizo: 'confidence',
  unidoc: 'confidence',
};

/** Reads a per-method TED chopping file (chainsaw, merizo, unidoc: headerless TSV with chain id, md5,
 * nres, ndom, chopping, score). Records are named `<method>`, carry the file's score (Chainsaw:
 * uncertainty; Merizo/UniDoc: confidence) and get accessions `<chain id>_<method>_D<NN>` in order of
 * first residue. */
export async function parseTedChopping(path: string, method: string): Promise<Located<TedHit>[]> {
  const kind = TED_METHOD_SCORES[method];
  if (!kind)
    throw new UsageError(
      `unknown TED method "${method}": its score's meaning is known for ${Object.keys(TED_METHOD_SCORES).join(', ')}`,
    );
  const out: Located<TedHit>[] = [];
  for await (const [line, text] of readLines(path)) {
    if (text.trim() === '' || text.startsWith('#')) continue;
    const f = tedFields(path, line, text, 6, CHOPPING_FIELDS);
    const p = cellParsers(path, line);
    const chain = p.text('chain id', f[0])!;
    const nres = p.int('nres', f[2], { min: 1 })!;
    const ndom = p.int('ndom', f[3], { min: 0 })!;
    const score = p.num('score', f[5], { nullable: true });
    const parsed = parseChopping(f[4], nres, (problem) => p.fail('chopping', problem));
    if (parsed.length !== ndom)
      p.fail('ndom', `ndom is ${ndom} but the chopping "${f[4]}" has ${parsed.length} domain(s)`);
    parsed
      .map((segments, order) => ({ segments, order }))
      .sort((a, b) => a.segments[0][0] - b.segments[0][0] || a.order - b.order)
      .forEach(({ segments }, i) => {
        out.push({
          file: path,
          line,
          record: {
            query: chain,
            source: 'ted',
            accession: `${chain}_${method}_D${two(i + 1)}`,
            name: method,
            start: segments[0][0],
            end: segments[segments.length - 1][1],
            segments,
            score,
            score_kind: score === null ? null : kind,
            evalue: null,
            method,
            nres,
          },
        });
      });
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Mapping to the release's isoforms

/** Reads a mapping TSV `id<TAB>transcript_id` (an optional header row `id	transcript_id`, `#`
 * comments and blank lines allowed). An id mapped twice to different transcripts is an error. */
export async function readIdMapping(path: string): Promise<Map<string, string>> {
  const mapping = new Map<string, string>();
  let first = true;
  for await (const [line, text] of readLines(path)) {
    if (text.trim() === '' || text.startsWith('#')) continue;
    const fields = text.split('\t');
    if (first && fields[0] === 'id' && fields[1] === 'transcript_id') {
      first = false;
      continue;
    }
    first = false;
    if (fields.length !== 2 || !fields[0] || !fields[1]) {
      throw new InputError(
        path,
        line,
        `expected 2 tab-separated fields (id, transcript_id), found ${fields.filter((x) => x !== '').length} non-empty of ${fields.length}`,
      );
    }
    const [id, transcript] = fields;
    const before = mapping.get(id);
    if (before !== undefined && before !== transcript)
      throw new InputError(path, line, `${id} is mapped to both ${before} and ${transcript}`, 'transcript_id');
    mapping.set(id, transcript);
  }
  return mapping;
}

/** transcript_id → protein sequence for the coding isoforms of a release. */
export function releaseProteins(db: Db): Map<string, string> {
  const rows = db
    .prepare('SELECT transcript_id, protein_sequence FROM isoforms WHERE coding = 1 AND protein_sequence IS NOT NULL')
    .all() as {
    transcript_id: string;
    protein_sequence: string;
  }[];
  return new Map(rows.map((r) => [r.transcript_id, r.protein_sequence]));
}

/** Attaches hits to release transcripts: an id that is itself a transcript of the release (a key of
 * `proteins`, transcript_id → protein sequence) maps to itself; otherwise it goes through `mapping`
 * (tool id → transcript id). Ids found in neither are listed once each in `unmapped` (in order of
 * first appearance) and their hits dropped; they are not errors. Whether a mapped transcript exists
 * and is long enough is checked by insertTrack. */
export function mapDomains(
  rows: Located<DomainHit>[],
  mapping: Map<string, string>,
  proteins?: Map<string, string>,
): { located: Located<DomainRecord>[]; unmapped: string[] } {
  const located: Located<DomainRecord>[] = [];
  const unmapped = new Set<string>();
  for (const { record, file, line } of rows) {
    const transcript = proteins?.has(record.query) ? record.query : mapping.get(record.query);
    if (transcript === undefined) {
      unmapped.add(record.query);
      continue;
    }
    const { source, accession, name, start, end, segments, score, score_kind, evalue } = record;
    located.push({
      file,
      line,
      record: { transcript_id: transcript, source, accession, name, start, end, segments, score, score_kind, evalue },
    });
  }
  return { located, unmapped: [...unmapped] };
}
