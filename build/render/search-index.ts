// The search index over gene symbols, gene ids, transcript ids and names, and the words of genes'
// full names, split into term shards
// (sorted term lists) and typo shards (MiniSearch indexes of gene symbols) as contract/search.ts
// describes. Documents, postings and typo keys go to scratch tables as the release is read; each
// shard is then written from them in order, so no more than one shard is ever in memory.
import MiniSearch from 'minisearch';
import { treePaths, type SearchDirectory } from '../../edge/contract/tree.js';
import {
  COMMON_NAME_WORD_SHARE,
  SEARCH_FIELDS,
  TERMS_PER_SHARD,
  TERM_SHARD_BYTES,
  TYPO_KEYS_PER_SHARD,
  allowedEdits,
  nameWords,
  searchTerms,
  typoIndexOptions,
  typoKeys,
  type SearchDocument,
  type TermDoc,
  type TermShardBody,
  type TypoDocument,
} from '../../edge/contract/search.js';
import { shardCountFor } from '../../edge/contract/shards.js';
import type { Db } from '../release-db/database.js';
import { bucketOf, type Scratch } from './scratch.js';
import type { TreeWriter } from './tree-writer.js';

/** Every document, numbered: genes in id order, then isoforms in id order. */
function* searchDocuments(db: Db): Iterable<SearchDocument> {
  const genes = db
    .prepare(
      `SELECT g.gene_id, g.gene_id_versioned, g.symbol, coalesce(i.synonyms, '[]'), i.name
       FROM genes g LEFT JOIN gene_info i USING (gene_id) ORDER BY gene_id`,
    )
    .raw()
    .iterate() as Iterable<[string, string | null, string, string, string | null]>;
  for (const [geneId, versioned, symbol, synonymsText, fullName] of genes) {
    const synonyms = JSON.parse(synonymsText) as string[];
    yield {
      id: `g:${geneId}`,
      type: 'gene',
      symbol,
      gene_id: geneId,
      gene_id_versioned: versioned,
      transcript_id: null,
      transcript_id_unversioned: null,
      transcript_name: null,
      gene_symbol: symbol,
      shown_name: fullName,
      synonyms: synonyms.length ? synonyms.join(' ') : null,
      name: fullName,
    };
  }
  const isoforms = db
    .prepare(
      `SELECT i.transcript_id, i.transcript_id_unversioned, i.transcript_name, g.symbol
       FROM isoforms i JOIN genes g USING (gene_id) ORDER BY i.transcript_id`,
    )
    .raw()
    .iterate() as Iterable<[string, string | null, string, string]>;
  for (const [transcriptId, unversioned, name, geneSymbol] of isoforms)
    yield {
      id: `i:${transcriptId}`,
      type: 'isoform',
      symbol: null,
      gene_id: null,
      gene_id_versioned: null,
      transcript_id: transcriptId,
      transcript_id_unversioned: unversioned,
      transcript_name: name,
      gene_symbol: geneSymbol,
      shown_name: name,
      synonyms: null,
      name: null,
    };
}

// Terms are stored as UTF-16BE blobs: SQLite compares blobs bytewise, which for UTF-16BE is the
// code-unit order the term shards are sorted in (TEXT would compare in UTF-8 order).
const termKey = (term: string) => Buffer.from(term, 'utf16le').swap16();
const termOf = (key: Buffer) => key.swap16().toString('utf16le');

/** Reads every document into the scratch tables; returns how many there are, and how many are genes
 * with a full name. */
function spillDocuments(db: Db, scratch: Scratch): { documents: number; named: number } {
  scratch.db.exec(`
    CREATE TABLE search_docs (n INTEGER PRIMARY KEY, id TEXT NOT NULL, gene_symbol TEXT NOT NULL, name TEXT);
    CREATE TABLE search_postings (term BLOB NOT NULL, doc INTEGER NOT NULL, field INTEGER NOT NULL);
    CREATE TABLE search_typo (bucket INTEGER NOT NULL, n INTEGER NOT NULL, id TEXT NOT NULL, symbol TEXT NOT NULL, name TEXT);
  `);
  const docs = scratch.spill('INSERT INTO search_docs (n, id, gene_symbol, name) VALUES (?, ?, ?, ?)');
  const postings = scratch.spill('INSERT INTO search_postings (term, doc, field) VALUES (?, ?, ?)');
  const typo = scratch.spill('INSERT INTO search_typo (bucket, n, id, symbol, name) VALUES (?, ?, ?, ?, ?)');
  let n = 0;
  let named = 0;
  for (const doc of searchDocuments(db)) {
    if (doc.name !== null) named += 1;
    docs.add(n, doc.id, doc.gene_symbol, doc.shown_name);
    SEARCH_FIELDS.forEach((field, f) => {
      const value = doc[field];
      if (value === null) return;
      // A full name is indexed by its words, each once ("proline rich 5" has three; "5" is one).
      const terms = field === 'name' ? new Set(nameWords(value)) : searchTerms(value);
      for (const term of terms) postings.add(termKey(term), n, f);
    });
    // Typo shards: each gene symbol long enough for typos, under its head key and its tail key.
    if (doc.type === 'gene' && doc.symbol !== null && allowedEdits(doc.symbol.toLowerCase()) > 0)
      for (const key of typoKeys(doc.symbol.toLowerCase())) typo.add(bucketOf(key), n, doc.id, doc.symbol, doc.name);
    n += 1;
  }
  for (const spill of [docs, postings, typo]) spill.flush();
  return { documents: n, named };
}

/** Term shards: every (term, document, field), in term order, cut between distinct terms; and the
 * common words of full names (more than `commonAbove` genes' names hold them). */
async function writeTermShards(
  w: TreeWriter,
  scratch: Scratch,
  directory: SearchDirectory,
  commonAbove: number,
): Promise<void> {
  const rows = scratch.db
    .prepare(
      `SELECT p.term, p.doc, p.field, d.id, d.gene_symbol, d.name
       FROM search_postings p JOIN search_docs d ON d.n = p.doc ORDER BY p.term, p.doc, p.field`,
    )
    .raw()
    .iterate() as Iterable<[Buffer, number, number, string, string, string | null]>;
  let body: TermShardBody = { docs: [], terms: [], postings: [] };
  let local = new Map<number, number>();
  let list: number[] = [];
  let last: Buffer | null = null;
  // How many genes' full names hold the current term (postings come in document order, one per field).
  let names = 0;
  const NAME = SEARCH_FIELDS.indexOf('name');
  const common: Record<string, number> = {};
  const endTerm = () => {
    if (names > commonAbove) common[body.terms.at(-1)!] = names;
  };
  // About the shard's JSON size: a cut needs no exact figure.
  let bytes = 0;
  const write = async () => {
    await w.json(treePaths.searchTerms(directory.terms.length), body);
    directory.terms.push({ from: body.terms[0], terms: body.terms.length });
    body = { docs: [], terms: [], postings: [] };
    local = new Map();
    bytes = 0;
  };
  for (const [key, doc, field, id, geneSymbol, name] of rows) {
    if (last === null || !key.equals(last)) {
      if (last !== null) endTerm();
      names = 0;
      if (body.terms.length === TERMS_PER_SHARD || bytes >= TERM_SHARD_BYTES) await write();
      last = key;
      const term = termOf(Buffer.from(key));
      body.terms.push(term);
      body.postings.push((list = []));
      bytes += term.length + 6;
    }
    let d = local.get(doc);
    if (d === undefined) {
      local.set(doc, (d = body.docs.length));
      body.docs.push([id, geneSymbol, name, doc] satisfies TermDoc);
      bytes += id.length + geneSymbol.length + (name?.length ?? 4) + 20;
    }
    list.push(d, field);
    if (field === NAME) names += 1;
    bytes += 8;
  }
  if (body.terms.length) {
    endTerm();
    await write();
  }
  directory.common_words = common;
}

/** Typo shards: MiniSearch indexes of the symbols filed under the shard's keys, in document order. */
async function writeTypoShards(w: TreeWriter, scratch: Scratch): Promise<number> {
  const symbols = scratch.db.prepare('SELECT count(DISTINCT n) FROM search_typo').pluck().get() as number;
  const count = shardCountFor(symbols * 2, TYPO_KEYS_PER_SHARD);
  const rows = scratch.db
    .prepare('SELECT bucket & ? AS shard, n, id, symbol, name FROM search_typo ORDER BY shard, n')
    .raw()
    .iterate(count - 1) as Iterable<[number, number, string, string, string | null]>;
  let shard = 0;
  let docs: TypoDocument[] = [];
  const write = async () => {
    const index = new MiniSearch<TypoDocument>(typoIndexOptions);
    index.addAll(docs);
    await w.json(treePaths.searchTypo(shard), index);
    docs = [];
    shard += 1;
  };
  for (const [s, n, id, symbol, name] of rows) {
    while (shard < s) await write();
    // A symbol whose head and tail keys share a shard is filed there once.
    if (docs.at(-1)?.n !== n) docs.push({ id, symbol, name, n });
  }
  while (shard < count) await write();
  return count;
}

/** Writes the term and fuzzy shards; returns their directory for edge/index.json. */
export async function renderSearchIndex(w: TreeWriter, db: Db, scratch: Scratch): Promise<SearchDirectory> {
  const { documents, named } = spillDocuments(db, scratch);
  const directory: SearchDirectory = { terms: [], typo: { shards: 0 }, documents };
  await writeTermShards(w, scratch, directory, named * COMMON_NAME_WORD_SHARE);
  directory.typo.shards = await writeTypoShards(w, scratch);
  return directory;
}
