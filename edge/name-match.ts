// How a query matches genes' full names (the name field of the search index), ranked as MyGene.info
// and Ensembl rank a name search: a gene whose name holds every word of the query ranks above one
// holding some; among those, the words as a phrase (in order, side by side) above the words anywhere,
// the whole name above a longer one, and a shorter name above a longer one ("proline rich 5" before
// "proline rich 5 like"). Words are nameWords: "mitogen-activated" and "mitogen activated" are the
// same two words.
import { NAME_WORD_WEIGHT, nameWords, searchTerms } from './contract/search.js';

/** Added when the name holds the query's words in their order, side by side. */
export const PHRASE_BONUS = 0.1;
/** Added on top when the name is exactly the query's words. */
export const WHOLE_NAME_BONUS = 0.15;
/** Times the share of the name's words the query has: a shorter name ranks first. */
export const LENGTH_BONUS = 0.1;
/** Words of a query matched against names (one bit each in a match's word set). */
export const NAME_WORDS_MAX = 30;

/** A query, split both ways: into terms (whitespace: what symbols and ids are matched against) and
 * into name words. */
export interface ParsedQuery {
  /** Distinct lower-cased terms. */
  terms: string[];
  /** Distinct name words, at most NAME_WORDS_MAX, in the order they first appear. */
  words: string[];
  /** Every name word of the query in order, for the phrase and whole-name checks. */
  sequence: string[];
  /** termMasks[i]: the bits (indexes in `words`) of terms[i]'s own words. */
  termMasks: number[];
  /** The bits of every word: a name holding all of them gets the bonuses. */
  allWords: number;
}

export function parseQuery(query: string): ParsedQuery {
  const terms = [...new Set(searchTerms(query))];
  const sequence = nameWords(query);
  const words = [...new Set(sequence)].slice(0, NAME_WORDS_MAX);
  const bit = (word: string) => {
    const j = words.indexOf(word);
    return j < 0 ? 0 : 1 << j;
  };
  const termMasks = terms.map((term) => nameWords(term).reduce((mask, word) => mask | bit(word), 0));
  return { terms, words, sequence, termMasks, allWords: words.reduce((mask, word) => mask | bit(word), 0) };
}

/** What a term scores through a name holding the words `found`: NAME_WORD_WEIGHT when the name holds
 * every word of the term ("mitogen-activated" is two), else nothing (a clone-based symbol such as
 * AC005301.9 would otherwise find every name with a 9). */
export function nameShare(found: number, termMask: number): number {
  return termMask !== 0 && (found & termMask) === termMask ? NAME_WORD_WEIGHT : 0;
}

const WORD = /[\p{L}\p{N}]/u;

/** Whether the character at `i` is a letter or digit (a word's), by code unit for ASCII. */
function isWordChar(text: string, i: number): boolean {
  const c = text.charCodeAt(i);
  if (c < 0x80) return (c >= 0x30 && c <= 0x39) || ((c | 0x20) >= 0x61 && (c | 0x20) <= 0x7a);
  return WORD.test(String.fromCodePoint(text.codePointAt(i)!));
}

/** How many words nameWords finds in `name`, without building them: a one-word query matches
 * thousands of names ("protein"), and only their lengths rank them. */
function wordCount(name: string): number {
  let count = 0;
  let inWord = false;
  for (let i = 0; i < name.length; i++) {
    // The second half of a surrogate pair continues its character.
    const c = name.charCodeAt(i);
    if (c >= 0xdc00 && c <= 0xdfff && i > 0) continue;
    const isWord = isWordChar(name, i);
    if (isWord && !inWord) count++;
    inWord = isWord;
  }
  return count;
}

/** The bits of `words` (a query's words, bit j for words[j]) among `wanted` that `name` holds as
 * whole words, as nameWords would split it. A query checks thousands of names for its common words:
 * an ASCII name is read in place, building no words. */
export function wordsInName(name: string, words: string[], wanted: number): number {
  let found = 0;
  for (let i = 0; i < name.length; i++) if (name.charCodeAt(i) >= 0x80) return wordsInNameSlow(name, words, wanted);
  let start = -1;
  for (let i = 0; i <= name.length; i++) {
    if (i < name.length && isWordChar(name, i)) {
      if (start < 0) start = i;
      continue;
    }
    if (start < 0) continue;
    const length = i - start;
    for (let j = 0; j < words.length; j++) {
      const bit = 1 << j;
      if (!(wanted & bit) || found & bit || words[j].length !== length) continue;
      let k = 0;
      while (k < length) {
        const c = name.charCodeAt(start + k);
        // ASCII lower case: an upper-case letter's code plus 32.
        if ((c >= 0x41 && c <= 0x5a ? c + 32 : c) !== words[j].charCodeAt(k)) break;
        k++;
      }
      if (k === length) found |= bit;
    }
    start = -1;
  }
  return found;
}

function wordsInNameSlow(name: string, words: string[], wanted: number): number {
  let found = 0;
  for (const word of nameWords(name)) {
    const j = words.indexOf(word);
    if (j >= 0 && wanted & (1 << j)) found |= 1 << j;
  }
  return found;
}

/** Whether `words` holds `sequence` in order, side by side. */
function holdsPhrase(words: string[], sequence: string[]): boolean {
  for (let i = 0; i + sequence.length <= words.length; i++) {
    let k = 0;
    while (k < sequence.length && words[i + k] === sequence[k]) k++;
    if (k === sequence.length) return true;
  }
  return false;
}

/** The bonuses of a full name that holds every word of the query (`sequence`, in order). */
export function nameBonus(sequence: string[], name: string): number {
  // One word, known to be in the name: always a phrase, and only the name's length is left to know.
  let count: number;
  let phrase = true;
  if (sequence.length === 1) count = wordCount(name);
  else {
    const words = nameWords(name);
    count = words.length;
    phrase = holdsPhrase(words, sequence);
  }
  const whole = phrase && count === sequence.length;
  return (
    (phrase ? PHRASE_BONUS : 0) + (whole ? WHOLE_NAME_BONUS : 0) + LENGTH_BONUS * Math.min(1, sequence.length / count)
  );
}
