// Native structure-model importer: AlphaFold DB / ColabFold mmCIF, ModelCIF (e.g. AlphaPulldown) and
// PDB-format models, plain or gzipped (detected by the gzip magic bytes, not the extension). Each model
// is parsed (sequence from its CA atoms, per-residue pLDDT), mapped to isoforms by an explicit
// transcript id or by protein-sequence identity, and turned into StructureRecords for insertTrack.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { basename, dirname, resolve } from 'node:path';
import { InputError, readTsv } from '../input.js';
import type { Located, StructureRecord } from '../tracks.js';

export interface ParsedModel {
  format: 'mmcif' | 'pdb';
  /** mmCIF data block name (without `data_`), or the file stem for PDB files. */
  modelId: string;
  /** One-letter sequence from the CA atoms of the first model, in file order (all chains). */
  sequence: string;
  /** Author seq id (label seq id when there is none) of the first residue. */
  firstResidue: number;
  /** Per-residue pLDDT: from _ma_qa_metric_local (a local pLDDT metric) when the file has it for the
   * residue, otherwise from the CA B factor. */
  plddt: number[];
  /** Per-residue CA B factors (B_iso_or_equiv / PDB columns 61–66), as written. */
  bFactors: number[];
  /** Where `plddt` came from. */
  plddtSource: 'ma_qa_metric_local' | 'b_factor';
  /** Mean of `plddt` (per residue). */
  meanPlddt: number;
  /** Mean B factor over all atoms of the first model. AlphaFold DB's global pLDDT is this atom-weighted
   * mean (AF-Q5VSL9-F1: 81.24 over 6718 atoms, while the per-residue mean is 80.82); ModelCIF from
   * AlphaPulldown and ColabFold use the per-residue mean. */
  atomMeanBFactor: number;
  /** From _ma_qa_metric_global (the global pLDDT metric) when the file records it. */
  globalPlddt: number | null;
  /** AFDB `-F<n>` models: the UniProt residues the model covers. */
  fragment: { index: number; uniprotStart: number; uniprotEnd: number } | null;
  /** The model text (decompressed when the file was gzipped). */
  bytes: Buffer;
}

const THREE_TO_ONE: Record<string, string> = {
  ALA: 'A',
  ARG: 'R',
  ASN: 'N',
  ASP: 'D',
  CYS: 'C',
  GLN: 'Q',
  GLU: 'E',
  GLY: 'G',
  HIS: 'H',
  ILE: 'I',
  LEU: 'L',
  LYS: 'K',
  MET: 'M',
  PHE: 'F',
  PRO: 'P',
  SER: 'S',
  THR: 'T',
  TRP: 'W',
  TYR: 'Y',
  VAL: 'V',
  MSE: 'M',
  UNK: 'X',
};

const GZIP_MAGIC = [0x1f, 0x8b];

/** Reads a file's bytes, gunzipping when it starts with the gzip magic bytes. */
function readModelBytes(path: string): Buffer {
  let raw: Buffer;
  try {
    raw = readFileSync(path);
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    throw new InputError(
      path,
      null,
      code === 'ENOENT' ? 'file not found' : `cannot read the model file (${code ?? String(err)})`,
    );
  }
  if (raw.length >= 2 && raw[0] === GZIP_MAGIC[0] && raw[1] === GZIP_MAGIC[1]) {
    try {
      return gunzipSync(raw);
    } catch {
      throw new InputError(path, null, 'not valid gzip data (truncated or corrupt file?)');
    }
  }
  return raw;
}

/** File name without directories and without .gz / .cif / .pdb / .ent extensions. */
function fileStem(path: string): string {
  return basename(path)
    .replace(/\.gz$/i, '')
    .replace(/\.(cif|mmcif|bcif|pdb|ent)$/i, '');
}

/** AFDB fragment number from an id such as `AF-Q15772-F3` or `AF-Q15772-F3-model_v4`. */
function fragmentIndex(id: string): number | null {
  const m = /^AF-.+-F(\d+)(?:-model_v\d+)?$/.exec(id);
  return m ? Number(m[1]) : null;
}

/** AFDB splits long proteins into 1400-aa windows starting every 200 aa. */
function fragmentFromIndex(index: number, length: number) {
  const uniprotStart = 200 * (index - 1) + 1;
  return { index, uniprotStart, uniprotEnd: uniprotStart + length - 1 };
}

function mean(values: number[]): number {
  return values.reduce((a, b) => a + b, 0) / values.length;
}

// ---------------------------------------------------------------------------------------------
// mmCIF

interface Token {
  value: string | null; // null for unquoted `?` and `.`
  raw: string;
  quoted: boolean;
  line: number;
}

/** Splits CIF text into tokens with their line numbers: quoted strings, `;` text fields, comments. */
function tokenize(text: string, path: string): { tokens: Token[]; lastLine: number } {
  const lines = text.split('\n');
  const tokens: Token[] = [];
  for (let i = 0; i < lines.length; i++) {
    let s = lines[i];
    if (s.endsWith('\r')) s = s.slice(0, -1);
    const lineNo = i + 1;
    if (s.startsWith(';')) {
      const parts = [s.slice(1)];
      let j = i + 1;
      for (; j < lines.length; j++) {
        const t = lines[j].endsWith('\r') ? lines[j].slice(0, -1) : lines[j];
        if (t.startsWith(';')) break;
        parts.push(t);
      }
      if (j >= lines.length)
        throw new InputError(path, lineNo, 'text field opened with ";" is never closed (truncated file?)');
      const value = parts.join('\n');
      tokens.push({ value, raw: value, quoted: true, line: lineNo });
      // anything after the closing ';' on its line is more tokens; AFDB/ModelCIF never put any there
      i = j;
      continue;
    }
    let k = 0;
    const n = s.length;
    while (k < n) {
      const c = s[k];
      if (c === ' ' || c === '\t') {
        k++;
        continue;
      }
      if (c === '#') break;
      if (c === "'" || c === '"') {
        // a quote closes only when followed by whitespace or the end of the line
        let e = k + 1;
        while (e < n && !(s[e] === c && (e + 1 === n || s[e + 1] === ' ' || s[e + 1] === '\t'))) e++;
        if (e >= n) throw new InputError(path, lineNo, `quoted value ${s.slice(k, k + 30)}… is never closed`);
        const value = s.slice(k + 1, e);
        tokens.push({ value, raw: value, quoted: true, line: lineNo });
        k = e + 1;
        continue;
      }
      let e = k;
      while (e < n && s[e] !== ' ' && s[e] !== '\t') e++;
      const raw = s.slice(k, e);
      tokens.push({ value: raw === '?' || raw === '.' ? null : raw, raw, quoted: false, line: lineNo });
      k = e;
    }
  }
  return { tokens, lastLine: lines.length };
}

interface CifLoop {
  names: string[]; // lower-cased full item names, e.g. `_atom_site.b_iso_or_equiv`
  rows: Token[][];
  line: number;
}
interface CifBlock {
  name: string;
  items: Map<string, Token>;
  loops: CifLoop[];
  lastLine: number;
}

const isKeyword = (t: Token) =>
  !t.quoted && (t.raw.startsWith('_') || /^(loop_|data_|save_|global_|stop_)/i.test(t.raw));

/** The first data block of a CIF file. */
function parseCif(text: string, path: string): CifBlock {
  const { tokens, lastLine } = tokenize(text, path);
  let i = 0;
  if (!tokens.length || tokens[0].quoted || !/^data_/i.test(tokens[0].raw)) {
    throw new InputError(path, tokens[0]?.line ?? 1, 'not an mmCIF file: expected a data_ block header first');
  }
  const block: CifBlock = { name: tokens[0].raw.slice(5), items: new Map(), loops: [], lastLine };
  i = 1;
  while (i < tokens.length) {
    const t = tokens[i];
    if (!t.quoted && /^data_/i.test(t.raw)) break; // first data block only
    if (!t.quoted && /^loop_$/i.test(t.raw)) {
      const loop: CifLoop = { names: [], rows: [], line: t.line };
      i++;
      while (i < tokens.length && !tokens[i].quoted && tokens[i].raw.startsWith('_'))
        loop.names.push(tokens[i++].raw.toLowerCase());
      if (!loop.names.length) throw new InputError(path, t.line, 'loop_ without item names');
      const values: Token[] = [];
      while (i < tokens.length && !isKeyword(tokens[i])) values.push(tokens[i++]);
      if (values.length % loop.names.length !== 0) {
        const last = values[values.length - 1] ?? t;
        throw new InputError(
          path,
          last.line,
          `loop ${loop.names[0].split('.')[0]} ends with an incomplete row: ${values.length} values for ${loop.names.length} columns (truncated file?)`,
          loop.names[values.length % loop.names.length]?.split('.')[1],
        );
      }
      for (let r = 0; r < values.length; r += loop.names.length) loop.rows.push(values.slice(r, r + loop.names.length));
      block.loops.push(loop);
      continue;
    }
    if (!t.quoted && t.raw.startsWith('_')) {
      const v = tokens[i + 1];
      if (!v || isKeyword(v)) throw new InputError(path, t.line, `item ${t.raw} has no value`, t.raw);
      block.items.set(t.raw.toLowerCase(), v);
      i += 2;
      continue;
    }
    if (!t.quoted && /^(save_|global_|stop_)/i.test(t.raw)) {
      i++;
      continue;
    }
    throw new InputError(path, t.line, `unexpected value "${t.raw}" outside a loop`);
  }
  return block;
}

/** A category as rows of name → token, whether it is written as a loop or as single items. */
function category(block: CifBlock, cat: string): { rows: Map<string, Token>[]; line: number } | null {
  const prefix = `${cat.toLowerCase()}.`;
  const loop = block.loops.find((l) => l.names[0].startsWith(prefix));
  if (loop) {
    return {
      line: loop.line,
      rows: loop.rows.map((row) => new Map(loop.names.map((name, k) => [name.slice(prefix.length), row[k]]))),
    };
  }
  const row = new Map<string, Token>();
  let line = Infinity;
  for (const [name, token] of block.items) {
    if (name.startsWith(prefix)) {
      row.set(name.slice(prefix.length), token);
      line = Math.min(line, token.line);
    }
  }
  return row.size ? { rows: [row], line } : null;
}

function cifNumber(path: string, token: Token, column: string, opts: { integer?: boolean } = {}): number {
  const v = token.value;
  const n = v === null ? NaN : Number(v);
  if (v === null || !Number.isFinite(n) || v.trim() === '' || (opts.integer && !Number.isInteger(n))) {
    throw new InputError(
      path,
      token.line,
      `expected ${opts.integer ? 'an integer' : 'a number'}, found "${token.raw}"`,
      column,
    );
  }
  return n;
}

function parseMmcif(path: string, text: string, bytes: Buffer): ParsedModel {
  const block = parseCif(text, path);
  const atoms = category(block, '_atom_site');
  if (!atoms || !block.loops.some((l) => l.names[0].startsWith('_atom_site.'))) {
    throw new InputError(
      path,
      block.lastLine,
      'no _atom_site loop: the file has no atoms (truncated file?)',
      '_atom_site',
    );
  }
  const has = (name: string) => atoms.rows[0]?.has(name) ?? false;
  const atomCol = has('label_atom_id') ? 'label_atom_id' : has('auth_atom_id') ? 'auth_atom_id' : null;
  const compCol = has('label_comp_id') ? 'label_comp_id' : has('auth_comp_id') ? 'auth_comp_id' : null;
  const seqCol = has('auth_seq_id') ? 'auth_seq_id' : has('label_seq_id') ? 'label_seq_id' : null;
  for (const [col, name] of [
    [atomCol, 'label_atom_id'],
    [compCol, 'label_comp_id'],
    [seqCol, 'label_seq_id'],
    [has('b_iso_or_equiv') ? 'x' : null, 'B_iso_or_equiv'],
  ] as const) {
    if (col === null) throw new InputError(path, atoms.line, `the _atom_site loop has no ${name} column`, name);
  }

  // residue key → already has a CA (first alt loc wins)
  const seen = new Set<string>();
  let firstModel: string | null = null;
  let sequence = '';
  const bFactors: number[] = [];
  const labelKeys: string[] = []; // label_asym_id / label_seq_id of each residue, for _ma_qa_metric_local
  let firstResidue: number | null = null;
  let atomSum = 0;
  let atomCount = 0;
  let firstAlt: string | null = null;
  for (const row of atoms.rows) {
    const model = row.get('pdbx_pdb_model_num')?.value ?? null;
    if (firstModel === null) firstModel = model ?? '';
    else if ((model ?? '') !== firstModel) continue;
    const alt = row.get('label_alt_id')?.value ?? null;
    if (alt !== null && firstAlt === null) firstAlt = alt;
    if (alt !== null && alt !== firstAlt) continue;
    const bAtom = cifNumber(path, row.get('b_iso_or_equiv')!, 'B_iso_or_equiv');
    atomSum += bAtom;
    atomCount += 1;
    const atom = row.get(atomCol!)!.value;
    if (atom !== 'CA') continue;
    const chain = row.get('auth_asym_id')?.value ?? row.get('label_asym_id')?.value ?? '';
    const seqToken = row.get(seqCol!)!;
    const ins = row.get('pdbx_pdb_ins_code')?.value ?? '';
    const key = `${chain}\u0000${seqToken.raw}\u0000${ins}`;
    if (seen.has(key)) continue; // a second alt loc of a residue already read
    seen.add(key);
    const compToken = row.get(compCol!)!;
    const comp = (compToken.value ?? '').toUpperCase();
    const one = THREE_TO_ONE[comp];
    if (!one) continue; // a CA that is not an amino acid (e.g. a calcium ion named CA)
    const b = bAtom;
    if (firstResidue === null) firstResidue = cifNumber(path, seqToken, seqCol!, { integer: true });
    sequence += one;
    bFactors.push(b);
    labelKeys.push(
      `${row.get('label_asym_id')?.value ?? chain}\u0000${row.get('label_seq_id')?.value ?? seqToken.raw}`,
    );
  }
  if (!sequence.length)
    throw new InputError(path, atoms.line, 'the _atom_site loop has no CA atoms of amino-acid residues', atomCol!);

  // pLDDT metrics (ModelCIF ma_qa_metric): which metric ids are pLDDT, global or local
  const metrics = category(block, '_ma_qa_metric');
  const plddtIds = (mode: string) =>
    new Set(
      (metrics?.rows ?? [])
        .filter(
          (r) =>
            (r.get('mode')?.value ?? '').toLowerCase() === mode &&
            /plddt/i.test(`${r.get('type')?.value ?? ''} ${r.get('name')?.value ?? ''}`),
        )
        .map((r) => r.get('id')?.value),
    );
  const globalIds = plddtIds('global');
  const localIds = plddtIds('local');
  const modelMatches = (r: Map<string, Token>) => {
    const m = r.get('model_id')?.value;
    return m === undefined || m === null || firstModel === '' || firstModel === null || m === firstModel;
  };

  let globalPlddt: number | null = null;
  const global = category(block, '_ma_qa_metric_global');
  for (const r of global?.rows ?? []) {
    if (globalIds.has(r.get('metric_id')?.value) && modelMatches(r)) {
      globalPlddt = cifNumber(path, r.get('metric_value')!, '_ma_qa_metric_global.metric_value');
      break;
    }
  }

  let plddt = bFactors;
  let plddtSource: ParsedModel['plddtSource'] = 'b_factor';
  const local = category(block, '_ma_qa_metric_local');
  if (local && localIds.size) {
    const byResidue = new Map<string, number>();
    for (const r of local.rows) {
      if (!localIds.has(r.get('metric_id')?.value) || !modelMatches(r)) continue;
      const key = `${r.get('label_asym_id')?.value ?? ''}\u0000${r.get('label_seq_id')?.value ?? ''}`;
      byResidue.set(key, cifNumber(path, r.get('metric_value')!, '_ma_qa_metric_local.metric_value'));
    }
    if (byResidue.size) {
      plddt = labelKeys.map((k, idx) => byResidue.get(k) ?? bFactors[idx]);
      plddtSource = 'ma_qa_metric_local';
    }
  }

  const modelId = block.name || fileStem(path);
  let fragment: ParsedModel['fragment'] = null;
  const index = fragmentIndex(modelId) ?? fragmentIndex(fileStem(path));
  if (index !== null) {
    const ref = category(block, '_ma_target_ref_db_details')?.rows[0];
    const begin = ref?.get('seq_db_align_begin');
    const end = ref?.get('seq_db_align_end');
    fragment =
      begin?.value && end?.value
        ? {
            index,
            uniprotStart: cifNumber(path, begin, 'seq_db_align_begin', { integer: true }),
            uniprotEnd: cifNumber(path, end, 'seq_db_align_end', { integer: true }),
          }
        : fragmentFromIndex(index, sequence.length);
  }

  return {
    format: 'mmcif',
    modelId,
    sequence,
    firstResidue: firstResidue!,
    plddt,
    bFactors,
    plddtSource,
    meanPlddt: mean(plddt),
    atomMeanBFactor: atomSum / atomCount,
    globalPlddt,
    fragment,
    bytes,
  };
}

// ---------------------------------------------------------------------------------------------
// PDB

function parsePdb(path: string, text: string, bytes: Buffer): ParsedModel {
  const lines = text.split('\n');
  const seen = new Set<string>();
  let sequence = '';
  const bFactors: number[] = [];
  let firstResidue: number | null = null;
  let dbref: { start: number; end: number } | null = null;
  let atomSum = 0;
  let atomCount = 0;
  let firstAlt: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const s = lines[i].endsWith('\r') ? lines[i].slice(0, -1) : lines[i];
    const lineNo = i + 1;
    const record = s.slice(0, 6);
    if (record === 'ENDMDL') break; // first model only
    if (record === 'DBREF ' && dbref === null) {
      const start = Number(s.slice(55, 60));
      const end = Number(s.slice(62, 67));
      if (Number.isInteger(start) && Number.isInteger(end) && start > 0 && end >= start) dbref = { start, end };
      continue;
    }
    if (record !== 'ATOM  ' && record !== 'HETATM') continue;
    const bText = s.slice(60, 66);
    const b = Number(bText);
    if (bText.trim() === '' || !Number.isFinite(b))
      throw new InputError(path, lineNo, `expected a number in columns 61–66, found "${bText}"`, 'B-factor');
    const alt = s[16] ?? ' ';
    if (alt !== ' ' && firstAlt === null) firstAlt = alt;
    if (alt !== ' ' && alt !== firstAlt) continue;
    atomSum += b;
    atomCount += 1;
    if (s.slice(12, 16).trim() !== 'CA') continue;
    const resName = s.slice(17, 20).trim().toUpperCase();
    const one = THREE_TO_ONE[resName];
    if (!one) continue; // calcium ions and other non-amino-acid CA atoms
    const key = `${s[21] ?? ''}\u0000${s.slice(22, 26)}\u0000${s[26] ?? ''}`; // chain, resSeq, iCode
    if (seen.has(key)) continue; // alternate locations: the first one wins
    seen.add(key);
    if (firstResidue === null) {
      const seqText = s.slice(22, 26).trim();
      if (!/^-?\d+$/.test(seqText))
        throw new InputError(
          path,
          lineNo,
          `expected an integer residue number in columns 23–26, found "${seqText}"`,
          'resSeq',
        );
      firstResidue = Number(seqText);
    }
    sequence += one;
    bFactors.push(b);
  }
  if (!sequence.length)
    throw new InputError(path, lines.length, 'no CA atoms of amino-acid residues in ATOM/HETATM records', 'ATOM');
  const modelId = fileStem(path);
  const index = fragmentIndex(modelId);
  const fragment =
    index === null
      ? null
      : dbref
        ? { index, uniprotStart: dbref.start, uniprotEnd: dbref.end }
        : fragmentFromIndex(index, sequence.length);
  return {
    format: 'pdb',
    modelId,
    sequence,
    firstResidue: firstResidue!,
    plddt: bFactors,
    bFactors,
    plddtSource: 'b_factor',
    meanPlddt: mean(bFactors),
    atomMeanBFactor: atomSum / atomCount,
    globalPlddt: null,
    fragment,
    bytes,
  };
}

/** The records a PDB file may start with, by name: padded to six columns, as the files have them. */
const PDB_RECORD = new RegExp(
  `^(${['HEADER', 'TITLE ', 'COMPND', 'SOURCE', 'REMARK', 'CRYST1', 'MODEL ', 'ATOM  ', 'HETATM', 'EXPDTA', 'AUTHOR', 'KEYWDS', 'REVDAT', 'DBREF', 'SEQRES'].join('|')})`,
);

/** Parses one model file (mmCIF/ModelCIF or PDB, plain or gzipped). Malformed files → InputError
 * naming the file, line and column. */
export async function parseStructureModel(path: string): Promise<ParsedModel> {
  const bytes = readModelBytes(path);
  const text = bytes.toString('utf8');
  const first = text.split('\n').find((l) => l.trim() !== '' && !l.startsWith('#')) ?? '';
  if (/^data_/i.test(first)) return parseMmcif(path, text, bytes);
  if (PDB_RECORD.test(first)) return parsePdb(path, text, bytes);
  throw new InputError(path, 1, 'not a structure model: expected an mmCIF data_ block or PDB records');
}

// ---------------------------------------------------------------------------------------------
// Mapping models to isoforms

export interface StructureModelRef {
  path: string;
  /** Explicit isoform (from a mapping file); without it the model is mapped by sequence identity. */
  transcriptId?: string;
  /** Where the mapping came from, for error messages (mapping file and row). */
  file?: string;
  line?: number;
}

/** Reads a TSV mapping file with header `model_file<TAB>transcript_id`; model_file paths are relative
 * to the mapping file. Unknown columns are reported as warnings; malformed rows are InputErrors. */
export async function readStructureMapping(path: string): Promise<{ models: StructureModelRef[]; warnings: string[] }> {
  // transcript_id is optional: a model without one is mapped by protein sequence identity.
  const required = ['model_file'];
  const known = ['model_file', 'transcript_id'];
  const models: StructureModelRef[] = [];
  const warnings: string[] = [];
  let warned = false;
  for await (const { line, row } of readTsv(path, { required })) {
    if (!warned) {
      warned = true;
      const unknown = Object.keys(row).filter((c) => !known.includes(c));
      if (unknown.length) warnings.push(`${path}: ignoring unknown column(s): ${unknown.join(', ')}`);
    }
    const modelFile = row.model_file.trim();
    const transcriptId = (row.transcript_id ?? '').trim();
    if (!modelFile) throw new InputError(path, line, 'a model file is required', 'model_file');
    if (/\s/.test(transcriptId))
      throw new InputError(
        path,
        line,
        `"${transcriptId}" is not a transcript id (contains whitespace)`,
        'transcript_id',
      );
    models.push({ path: resolve(dirname(path), modelFile), transcriptId: transcriptId || undefined, file: path, line });
  }
  return { models, warnings };
}

const round2 = (x: number) => Math.round(x * 100) / 100;

/** The mean pLDDT stored for a model, rounded to 2 decimals: the global pLDDT the file records when it
 * has one (so AFDB models show the figure AFDB publishes, an atom-weighted mean), otherwise the mean
 * of the per-residue values. */
export function recordMeanPlddt(model: ParsedModel): number {
  return round2(model.globalPlddt ?? model.meanPlddt);
}

/** Where a model named for a transcript starts on that transcript's protein: 1 when its sequence is
 * the protein, the window's start when it is an AFDB fragment of it. Any other model is refused: its
 * per-residue values would be read against the wrong residues. A transcript the release has no
 * protein for is left to insertTrack, which names it. */
function namedModelStart(ref: StructureModelRef, model: ParsedModel, protein: string | undefined): number {
  if (protein === undefined || model.sequence === protein) return 1;
  const f = model.fragment;
  if (f && protein.slice(f.uniprotStart - 1, f.uniprotEnd) === model.sequence) return f.uniprotStart;
  const window = f ? `, nor its residues ${f.uniprotStart}–${f.uniprotEnd} (the model's fragment F${f.index})` : '';
  throw new InputError(
    ref.file ?? ref.path,
    ref.line ?? null,
    `the model ${basename(ref.path)} (${model.sequence.length} aa) is not the protein of ${ref.transcriptId} (${protein.length} aa)${window}: name the isoform whose protein it models, or leave transcript_id empty to map it by sequence`,
    ref.file ? 'transcript_id' : undefined,
  );
}

/** Turns model files into structure records. A model with a transcriptId is assigned to it when its
 * sequence is that isoform's protein or, for an AFDB fragment, its window (namedModelStart). Otherwise it maps to every isoform whose protein equals
 * the model sequence, or, for an AFDB fragment, whose protein has the model sequence at
 * uniprotStart..uniprotEnd. An isoform gets one model: a whole-protein match beats a fragment, then the
 * first model given wins. Models that map to nothing are listed in `unmapped` (not an error).
 * `mmcif` holds the model text as given (decompressed when gzipped); PDB-format models are stored as
 * they are too — the structure redirect serves the stored bytes unchanged. */
export async function structureRecords(
  models: StructureModelRef[],
  proteins: Map<string, string>,
  modelSource: string,
): Promise<{ located: Located<StructureRecord>[]; unmapped: string[] }> {
  const byProtein = new Map<string, string[]>();
  for (const [id, protein] of proteins) {
    const p = protein.replace(/\*$/, '');
    const list = byProtein.get(p);
    if (list) list.push(id);
    else byProtein.set(p, [id]);
  }
  const explicit: Located<StructureRecord>[] = [];
  // transcript → best sequence match so far
  const chosen = new Map<string, { rank: number; order: number; located: Located<StructureRecord> }>();
  const matched = new Set<number>();
  const unmapped: string[] = [];
  for (let order = 0; order < models.length; order++) {
    const ref = models[order];
    const model = await parseStructureModel(ref.path);
    // start: where the model's first residue sits on the isoform's protein (a fragment's UniProt window).
    const record = (transcript_id: string, start = 1): StructureRecord => ({
      transcript_id,
      model_source: modelSource,
      mean_plddt: recordMeanPlddt(model),
      mmcif: model.bytes,
      plddt_residues: { start, values: model.plddt },
    });
    if (ref.transcriptId) {
      explicit.push({
        record: record(
          ref.transcriptId,
          namedModelStart(ref, model, proteins.get(ref.transcriptId)?.replace(/\*$/, '')),
        ),
        file: ref.file ?? ref.path,
        line: ref.line ?? null,
      });
      continue;
    }
    const candidates: { id: string; rank: number; start: number }[] = (byProtein.get(model.sequence) ?? []).map(
      (id) => ({ id, rank: 0, start: 1 }),
    );
    const f = model.fragment;
    if (f && f.uniprotEnd - f.uniprotStart + 1 === model.sequence.length) {
      for (const [id, protein] of proteins) {
        const p = protein.replace(/\*$/, '');
        if (
          p !== model.sequence &&
          p.length >= f.uniprotEnd &&
          p.slice(f.uniprotStart - 1, f.uniprotEnd) === model.sequence
        )
          candidates.push({ id, rank: 1, start: f.uniprotStart });
      }
    }
    for (const { id, rank, start } of candidates) {
      const prev = chosen.get(id);
      if (!prev || rank < prev.rank)
        chosen.set(id, { rank, order, located: { record: record(id, start), file: ref.path, line: null } });
    }
    if (!candidates.length) unmapped.push(ref.path);
  }
  for (const { order } of chosen.values()) matched.add(order);
  // a model whose every isoform went to a better model maps to nothing in the end
  for (let order = 0; order < models.length; order++) {
    const ref = models[order];
    if (!ref.transcriptId && !matched.has(order) && !unmapped.includes(ref.path)) unmapped.push(ref.path);
  }
  const bySequence = [...chosen.values()].sort(
    (a, b) => a.order - b.order || a.located.record.transcript_id.localeCompare(b.located.record.transcript_id),
  );
  return { located: [...explicit, ...bySequence.map((c) => c.located)], unmapped };
}
