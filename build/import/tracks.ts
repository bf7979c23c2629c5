// `isoatlas import track`: the documented plain TSV format of each annotation track (data/README.md),
// so any pipeline can feed the atlas. Strict: unknown columns, unknown transcripts and positions
// outside the protein are errors. One input is one transaction; every record carries the input's
// provenance (real or generated).
import { readFileSync } from 'node:fs';
import { createHash } from 'node:crypto';
import { basename, dirname, resolve } from 'node:path';
import { InputError, cellParsers, readTsv, sha256File } from './input.js';
import type { Track } from '../release-db/schema.js';
import type { Db } from '../release-db/store.js';

export interface TrackInput {
  track: Track;
  file: string;
  source: string;
  version?: string;
  description?: string;
  generated: boolean;
}

export const TRACK_COLUMNS: Record<Track, { required: string[]; optional: string[] }> = {
  domains: { required: ['transcript_id', 'source', 'accession', 'start', 'end'], optional: ['name', 'segments', 'score', 'evalue'] },
  neoantigens: { required: ['transcript_id', 'peptide', 'allele', 'start'], optional: ['affinity_nm', 'percentile_rank'] },
  ptm: { required: ['transcript_id', 'position', 'residue', 'modification'], optional: ['source'] },
  structures: { required: ['transcript_id', 'model_file', 'mean_plddt', 'model_source'], optional: [] },
};

interface Protein {
  coding: number | null;
  protein_length: number | null;
  protein_sequence: string | null;
}

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

export async function importTrack(db: Db, input: TrackInput): Promise<number> {
  const { track, file } = input;
  const columns = TRACK_COLUMNS[track];
  const proteinOf = db.prepare('SELECT coding, protein_length, protein_sequence FROM isoforms WHERE transcript_id = ?');
  const provenance = input.generated ? 'generated' : 'real';
  const rows: unknown[][] = [];
  const seen = new Set<string>();

  for await (const { line, row } of readTsv(file, { required: columns.required, allowed: [...columns.required, ...columns.optional] })) {
    const p = cellParsers(file, line);
    const transcriptId = p.text('transcript_id', row.transcript_id)!;
    const protein = proteinOf.get(transcriptId) as Protein | undefined;
    if (!protein) p.fail('transcript_id', `${transcriptId} is not an isoform of this release`);
    if (!protein!.coding || protein!.protein_length === null) p.fail('transcript_id', `${transcriptId} is not a coding isoform: it has no protein to annotate`);
    const length = protein!.protein_length!;
    const within = (column: string, pos: number) => {
      if (pos > length) p.fail(column, `position ${pos} is beyond the end of ${transcriptId}'s protein (${length} aa)`);
    };

    if (track === 'domains') {
      const source = row.source;
      if (source !== 'pfam' && source !== 'ted') p.fail('source', `expected pfam or ted, found "${source}"`);
      const start = p.int('start', row.start, { min: 1 })!;
      const end = p.int('end', row.end, { min: 1 })!;
      if (end < start) p.fail('end', `end ${end} is before start ${start}`);
      within('end', end);
      const segments = row.segments ? parseSegments(row.segments, (problem) => p.fail('segments', problem)) : [[start, end] as [number, number]];
      if (segments[0][0] !== start || segments[segments.length - 1][1] !== end) {
        p.fail('segments', `segments ${row.segments} do not span start-end ${start}-${end}`);
      }
      rows.push([
        transcriptId, source, p.text('accession', row.accession), p.text('name', row.name ?? '', { nullable: true }), start, end,
        JSON.stringify(segments), p.num('score', row.score ?? '', { nullable: true }), p.num('evalue', row.evalue ?? '', { min: 0, nullable: true }), provenance,
      ]);
    } else if (track === 'neoantigens') {
      const peptide = p.text('peptide', row.peptide)!.toUpperCase();
      if (!/^[ACDEFGHIKLMNPQRSTVWYUX]+$/.test(peptide)) p.fail('peptide', `"${peptide}" is not an amino-acid sequence`);
      const start = p.int('start', row.start, { min: 1 })!;
      within('start', start);
      const affinity = p.num('affinity_nm', row.affinity_nm ?? '', { min: 0, nullable: true });
      const percentile = p.num('percentile_rank', row.percentile_rank ?? '', { min: 0, max: 100, nullable: true });
      if (affinity === null && percentile === null) p.fail('affinity_nm', 'a neoantigen needs an affinity or a percentile rank');
      rows.push([transcriptId, peptide, p.text('allele', row.allele), affinity, percentile, start, provenance]);
    } else if (track === 'ptm') {
      const position = p.int('position', row.position, { min: 1 })!;
      within('position', position);
      const residue = p.text('residue', row.residue)!.toUpperCase();
      const actual = protein!.protein_sequence?.[position - 1];
      if (actual !== undefined && actual !== residue) {
        p.fail('residue', `${transcriptId} has ${actual} at position ${position}, not ${residue}`);
      }
      const modification = p.text('modification', row.modification)!;
      const key = `${transcriptId}\u0000${position}\u0000${modification}`;
      if (seen.has(key)) p.fail('position', `duplicate site ${transcriptId} ${residue}${position} ${modification}`);
      seen.add(key);
      rows.push([transcriptId, position, residue, modification, row.source || input.source, provenance]);
    } else {
      const plddt = p.num('mean_plddt', row.mean_plddt, { min: 0, max: 100 })!;
      const modelPath = resolve(dirname(file), p.text('model_file', row.model_file)!);
      let bytes: Buffer;
      try {
        bytes = readFileSync(modelPath);
      } catch {
        return p.fail('model_file', `cannot read model file ${modelPath}`);
      }
      if (seen.has(transcriptId)) p.fail('transcript_id', `${transcriptId} has more than one structure`);
      seen.add(transcriptId);
      rows.push([transcriptId, p.text('model_source', row.model_source), plddt, bytes, createHash('sha256').update(bytes).digest('hex'), provenance]);
    }
  }

  const insert = {
    domains: 'INSERT INTO domains (transcript_id, source, accession, name, start, end, segments, score, evalue, provenance) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)',
    neoantigens: 'INSERT INTO neoantigens (transcript_id, peptide, allele, affinity_nm, percentile_rank, start, provenance) VALUES (?, ?, ?, ?, ?, ?, ?)',
    ptm: 'INSERT INTO ptm_sites (transcript_id, position, residue, modification, source, provenance) VALUES (?, ?, ?, ?, ?, ?)',
    structures: 'INSERT INTO structures (transcript_id, model_source, mean_plddt, mmcif, mmcif_sha256, provenance) VALUES (?, ?, ?, ?, ?, ?)',
  }[track];
  const statement = db.prepare(insert);
  const already = db.prepare('SELECT 1 FROM track_sources WHERE track = ? AND input_file = ?').get(track, basename(file));
  if (already) throw new InputError(file, null, `${basename(file)} was already imported as the ${track} track of this release`);
  if (track === 'structures') {
    const existing = db.prepare('SELECT 1 FROM structures WHERE transcript_id = ?');
    for (const r of rows) if (existing.get(r[0])) throw new InputError(file, null, `${r[0]} already has a structure in this release`);
  }
  const sha = await sha256File(file);
  db.transaction(() => {
    for (const r of rows) statement.run(...r);
    db.prepare('INSERT INTO track_sources (track, source, version, generated, description, input_file, input_sha256, records) VALUES (?, ?, ?, ?, ?, ?, ?, ?)').run(
      track, input.source, input.version ?? null, input.generated ? 1 : 0, input.description ?? null, basename(file), sha, rows.length,
    );
  })();
  return rows.length;
}
