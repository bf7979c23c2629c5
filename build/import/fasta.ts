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

export async function readProteinFasta(path: string): Promise<ProteinFasta> {
  const sequences = new Map<string, string>();
  const stops = new Set<string>();
  const firstLine = new Map<string, number>();
  let id: string | null = null;
  let parts: string[] = [];
  const flush = () => {
    if (id === null) return;
    const sequence = parts.join('').toUpperCase();
    if (sequence.endsWith('*')) stops.add(id);
    sequences.set(id, sequence.replace(/\*$/, ''));
  };
  for await (const [line, text] of readLines(path)) {
    if (text.startsWith('>')) {
      flush();
      id = text.slice(1).split(/\s/)[0];
      if (!id) throw new InputError(path, line, 'FASTA header without an id');
      if (firstLine.has(id))
        throw new InputError(path, line, `duplicate sequence id ${id} (first at line ${firstLine.get(id)})`);
      firstLine.set(id, line);
      parts = [];
    } else if (text.trim() !== '') {
      if (id === null) throw new InputError(path, line, 'sequence before the first ">" header: is this a FASTA file?');
      const residues = text.trim();
      if (!RESIDUES.test(residues))
        throw new InputError(path, line, `invalid residue character in "${residues.slice(0, 30)}…"`);
      parts.push(residues);
    }
  }
  flush();
  for (const [seqId, seq] of sequences) {
    if (seq.includes('*'))
      throw new InputError(path, firstLine.get(seqId)!, `sequence ${seqId} has an internal stop "*"`);
  }
  return { sequences, stops };
}
