// Full names for the synthetic human-scale release's genes, so that its search index has a name field
// of human size and shape (search by name, issue #48). Each name is a real chr22 gene's name from
// data/gene-info (NCBI's, through org.Hs.eg.db) with its numbers drawn anew ("proline rich 5" → "proline
// rich 17"): the words, their frequencies and the names' lengths are real ones, the same name recurs
// as in gene families, and no generated name claims to be a real gene's.
import { readFileSync } from 'node:fs';
import { gunzipSync } from 'node:zlib';
import { DEMO } from '../paths.js';
import type { Rng } from './random.js';

/** Share of the genes with a name of their own symbol style that get one (about the share of
 * GENCODE's genes that HGNC names). */
const NAMED_SHARE = 0.85;

/** Clone-based symbols of unnamed lncRNAs (AC008132.13, RP11-43F13.3): NCBI gives them no name. */
const CLONE_SYMBOL = /^(A[CLP]|BX|CR)\d{6}\.\d+$|^(RP\d+|CTA|CTD|KB)-/;

/** The real names the synthetic ones are drawn from, in file order. */
export function nameTemplates(file = DEMO.geneInfo): string[] {
  const [header, ...rows] = gunzipSync(readFileSync(file)).toString('utf8').trimEnd().split('\n');
  const at = header.split('\t').indexOf('name');
  return rows.map((row) => row.split('\t')[at]).filter((name) => name !== undefined && name !== '');
}

/** A gene's full name, or null for a gene that has none (a clone-based symbol, or by chance). */
export function drawGeneName(rng: Rng, templates: readonly string[], symbol: string): string | null {
  if (CLONE_SYMBOL.test(symbol) || !rng.chance(NAMED_SHARE)) return null;
  // Each number drawn again within the range of its size (a family member 5 stays a small number).
  return rng.pick(templates).replace(/\d+/g, (n) => String(rng.int(1, Math.max(9, 2 * Number(n)))));
}
