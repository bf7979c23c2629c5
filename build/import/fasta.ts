// Protein FASTA reader. The record id is the header's first word (SQANTI3/TransDecoder headers carry
// `ID<TAB>ID.p1|N_aa|…` after it). The terminal stop `*` is dropped (protein length excludes it) and
// remembered: an ORF that ends in one is 3′ complete.
import { InputError, readLines } from './input.js';

const RESIDUES = /^[A-Za-z*]*$/;

export interface ProteinFasta {
  sequences: Map<string, string>;
  /** Ids of the sequences that ended in a stop `*`. */
  stops: Set<string>;
}

/** Reads a whole protein FASTA into memory (for tools and tests; the core import stages it). */
export async function readProteinFasta(path: string): Promise<ProteinFasta> {
  const sequences = new Map<string, string>();
  const stops = new Set<string>();
  const firstLine = new Map<string, number>();
  const seen = (id: string, line: number) => {
    const first = firstLine.get(id) ?? null;
    if (first === null) firstLine.set(id, line);
    return first;
  };
  for await (const record of proteinRecords(path, seen)) {
    if (record.stop) stops.add(record.id);
    sequences.set(record.id, record.sequence);
  }
  return { sequences, stops };
}

/** One FASTA record: its id, its sequence without the terminal stop, whether it had one, and the
 * line of its header. */
export interface ProteinRecord {
  id: string;
  sequence: string;
  stop: boolean;
  line: number;
}

/** The records of a protein FASTA one at a time, only the current one held. `seen(id, line)` is told
 * each header and says where that id was first seen (null when it is new): a second one is an error.
 * An internal stop is reported after the whole file is read (its other problems come first), at the
 * first record that has one. */
export async function* proteinRecords(
  path: string,
  seen: (id: string, line: number) => number | null,
): AsyncGenerator<ProteinRecord> {
  let id: string | null = null;
  let header = 0;
  let parts: string[] = [];
  let internalStop: { id: string; line: number } | null = null;
  const record = (): ProteinRecord | null => {
    if (id === null) return null;
    const sequence = parts.join('').toUpperCase();
    const stop = sequence.endsWith('*');
    const trimmed = sequence.replace(/\*$/, '');
    if (!internalStop && trimmed.includes('*')) internalStop = { id, line: header };
    return { id, sequence: trimmed, stop, line: header };
  };
  for await (const [line, text] of readLines(path)) {
    if (text.startsWith('>')) {
      const done = record();
      if (done) yield done;
      id = text.slice(1).split(/\s/)[0];
      if (!id) throw new InputError(path, line, 'FASTA header without an id');
      const first = seen(id, line);
      if (first !== null) throw new InputError(path, line, `duplicate sequence id ${id} (first at line ${first})`);
      header = line;
      parts = [];
    } else if (text.trim() !== '') {
      if (id === null) throw new InputError(path, line, 'sequence before the first ">" header: is this a FASTA file?');
      const residues = text.trim();
      if (!RESIDUES.test(residues))
        throw new InputError(path, line, `invalid residue character in "${residues.slice(0, 30)}…"`);
      parts.push(residues);
    }
  }
  const last = record();
  if (last) yield last;
  const found = internalStop as { id: string; line: number } | null;
  if (found) throw new InputError(path, found.line, `sequence ${found.id} has an internal stop "*"`);
}
