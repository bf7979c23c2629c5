// Redaction of API keys, and of anything that could be a piece of one, from client text before it is
// echoed (a problem's detail and instance, the search echo) or logged (a request's target). Whole
// lines a process writes about its own work (paths of its files, its variables' names, in which
// random names such as a temporary directory's look like pieces of secrets) lose what is shaped like
// a key (redactKeyShapes): what a client sent reaches them only through the fields redacted above.
//
// The server cannot look for the secrets it issued: its registry keeps only HMACs of keys. So it
// redacts what could be a secret; SECURITY.md ("Redaction") gives the reasoning and the odds.
//   1. The text is read the way a server decodes it: percent-encoding in any hex case, also encoded
//      again (`%255F`), is decoded for the reading.
//   2. The reading is cut into runs of the secret alphabet (letters, digits, `_`, `-`), and runs into
//      parts (between `-` and `_`). Runs at most MAX_GAP other characters apart (none of them `"`
//      or `/`) form a stretch, read as one: a key with a space, `.`, `+`, `&`, `=` or a line break
//      pasted into it is still one stretch.
//   3. Each run is of a kind (below). A stretch could hold a secret when a run holds the key prefix,
//      or its runs unlike the API's words hold PIECE characters and its runs other than prose hold
//      MIN_UNLIKE, or its long (PIECE characters or more) dense and unlike runs hold MIN_DENSE.
//   4. Then every token of the original text (alphabet characters and `%`) of PIECE characters or
//      more that meets the stretch is replaced. What is left are tokens shorter than PIECE between
//      other characters: no PIECE characters of a secret in a row, as written or decoded.
//   5. A text that quotes one piece of a request (a detail naming a parameter's value) is read
//      against the whole request too: PIECE characters in a row of anything replaced there are
//      replaced here, so a key cut across two parameters leaves nothing in either.
// Every kind but prose and plain needs a capital with a sign beside it (signBeside) or in a run of
// LONG_RUN characters, so a text with no `%`, no key prefix and no such capital is returned at once,
// unread: most lines logged.

/** What stands in for a token redacted; one that starts with the key prefix keeps it, so the line
 * still says a key was there. */
export const REDACTED = '[redacted]';
export const REDACTED_KEY = 'isoatlas_[redacted]';

/** The shortest piece of a secret redaction keeps out of a text. */
const PIECE = 8;
/** Characters of runs other than prose a stretch needs, with PIECE characters unlike the API's words. */
const MIN_UNLIKE = 20;
/** Characters of long dense or unlike runs a stretch needs. */
const MIN_DENSE = 32;
/** The most characters between two runs of one stretch: a line break and a space or `=` (an email's
 * or quoted-printable's wrap) between two pieces of a key still join them. */
const MAX_GAP = 3;
/** The shortest dense part: the API's symbols, transcript names' parts and accessions are shorter. */
const MIN_DENSE_PART = 11;
/** From this many letters and digits, a run with a capital is unlike the API's words unless all its
 * parts are prose. */
const LONG_RUN = 30;

/** A token of the original text: alphabet characters and percent-encodings (of them or anything). */
const TOKENS = /[A-Za-z0-9_%-]+/g;
/** The key prefix, looked for first as a literal (quick). */
const KEY_PREFIX = /isoatlas_/i;
const KEY_PREFIX_FIRST = /^isoatlas_/i;
/** A percent-encoded byte, also encoded again: one character of the reading. */
const ENCODED = /%(?:25)*([0-9A-Fa-f]{2})/g;
const CAPITAL_ROWS = /[A-Z]+/g;
const RUNS = /[A-Za-z0-9_-]+/g;
/** camelCase or PascalCase: capitalised words, an acronym at either end, digits only at the end
 * (novelGene, DiGeorge, XXbac, hPANX2, getHTTP, Mov10). */
const CAMEL_PART = /^(?:[a-z]+|[A-Z]{1,4}[a-z]*)?(?:[A-Z][a-z]{2,})*(?:[A-Z]{2,5})?[0-9]*$/;
/** Two lowercase letters or more without a vowel: not in a word of camelCase (a random mix of cases
 * often is camelCase, but seldom pronounceable). */
const VOWELLESS = /(?:^|[^a-z])[b-df-hj-np-tv-xz]{2,}(?![a-z])/;
/** HGNC's symbols for open reading frames: C22orf39, CXorf21. */
const ORF_SYMBOL = /^C[0-9XY]{1,2}orf[0-9]+$/;

// What a run may be, in rising order of suspicion:
/** Prose words (lowercase or capitalised), lowercase hex, numbers or single characters only. */
const PROSE = 0;
/** Other words: ids, symbols, lowercase with digits, camelCase. */
const PLAIN = 1;
/** A part of MIN_DENSE_PART characters or more in capitals and digits, with a capital right after a
 * digit (not the T or Z of a time) or 8 capitals in a row: an upper-cased secret, not a symbol. */
const DENSE = 2;
/** Like no word of the API: a part mixing cases that is not camelCase, or LONG_RUN letters and
 * digits with a capital and a part that is not prose. */
const UNLIKE = 3;
/** Holds the key prefix and more. */
const KEY = 4;

const isUpper = (c: number) => c >= 65 && c <= 90;
const isLower = (c: number) => c >= 97 && c <= 122;
const isDigit = (c: number) => c >= 48 && c <= 57;
const isSeparator = (c: number) => c === 45 || c === 95;
const inAlphabet = (c: number) => isUpper(c) || isLower(c) || isDigit(c) || isSeparator(c);
/** A capital after a digit, other than the T and Z of an ISO 8601 time. */
const denseAfterDigit = (c: number) => c !== 84 && c !== 90;

/** Is the row of capitals text[start, end) beside a sign of a non-word: a lowercase letter across
 * digits only, before or after (a part mixing cases); a digit before it (a dense part); or is it 8
 * capitals long? With a run of LONG_RUN characters (runEndOrLong), these are what every run of
 * kind DENSE or UNLIKE has, which lets a text without any through unread. */
function signBeside(text: string, start: number, end: number): boolean {
  if (end - start >= PIECE) return true;
  let j = end;
  while (isDigit(text.charCodeAt(j))) j++;
  if (isLower(text.charCodeAt(j))) return true;
  j = start - 1;
  while (isDigit(text.charCodeAt(j))) j--;
  if (isLower(text.charCodeAt(j))) return true;
  // A digit before the row: dense, unless the row is the T or Z of a time.
  return isDigit(text.charCodeAt(start - 1)) && (end - start > 1 || denseAfterDigit(text.charCodeAt(start)));
}

/** Where the run holding text[i] ends, or -1 when it is LONG_RUN characters long or more. */
function runEndOrLong(text: string, i: number): number {
  let end = i + 1;
  while (inAlphabet(text.charCodeAt(end)) && end - i < LONG_RUN) end++;
  let start = i;
  while (start > 0 && inAlphabet(text.charCodeAt(start - 1)) && end - start < LONG_RUN) start--;
  return end - start >= LONG_RUN ? -1 : end;
}

/** Could the text hold a secret at all? Not when nothing is percent-encoded, no key prefix shows and
 * no row of capitals has a sign beside it or stands in a run of LONG_RUN characters. */
function maySuspect(text: string): boolean {
  if (text.includes('%') || KEY_PREFIX.test(text)) return true;
  let runEnd = -1;
  CAPITAL_ROWS.lastIndex = 0;
  while (CAPITAL_ROWS.test(text)) {
    const end = CAPITAL_ROWS.lastIndex;
    let start = end - 1;
    while (isUpper(text.charCodeAt(start - 1))) start--;
    if (signBeside(text, start, end)) return true;
    if (start >= runEnd && (runEnd = runEndOrLong(text, start)) < 0) return true;
  }
  return false;
}

/** The kind of one part, text[start, end) between separators. */
function partKind(text: string, start: number, end: number): number {
  let upper = 0;
  let lower = 0;
  let digits = 0;
  let hex = true;
  let dense = false;
  let row = 0;
  for (let i = start; i < end; i++) {
    const c = text.charCodeAt(i);
    if (isDigit(c)) {
      digits++;
      row = 0;
      continue;
    }
    if (isUpper(c)) {
      upper++;
      hex = false;
      if (i > start && isDigit(text.charCodeAt(i - 1)) && denseAfterDigit(c)) dense = true;
      if (++row >= PIECE) dense = true;
    } else {
      lower++;
      if (c > 102) hex = false;
      row = 0;
    }
  }
  if (end - start === 1 || (upper === 0 && (hex || digits === 0))) return PROSE;
  if (upper === 1 && lower === end - start - 1 && isUpper(text.charCodeAt(start))) return PROSE;
  if (upper > 0 && lower > 0) {
    const part = text.slice(start, end);
    return (CAMEL_PART.test(part) && !VOWELLESS.test(part)) || ORF_SYMBOL.test(part) ? PLAIN : UNLIKE;
  }
  return dense && end - start >= MIN_DENSE_PART ? DENSE : PLAIN;
}

/** Does `isoatlas` (any case) end just before text[at]? */
function keyPrefixBefore(text: string, at: number): boolean {
  for (let j = 0; j < 8; j++) if ((text.charCodeAt(at - 8 + j) | 32) !== 'isoatlas'.charCodeAt(j)) return false;
  return true;
}

/** The kind of the run text[start, end): its most telling part's, or KEY; UNLIKE too when it is
 * LONG_RUN letters and digits long, holds a capital and a part that is not prose. */
function kindOf(text: string, start: number, end: number): number {
  let kind = PROSE;
  let alphanumerics = 0;
  let capital = false;
  let partStart = start;
  for (let i = start; i <= end; i++) {
    const c = i < end ? text.charCodeAt(i) : 45;
    if (!isSeparator(c)) {
      alphanumerics++;
      if (isUpper(c)) capital = true;
      continue;
    }
    if (c === 95 && i - start >= 8 && i < end - 1 && keyPrefixBefore(text, i)) return KEY;
    if (i > partStart) kind = Math.max(kind, partKind(text, partStart, i));
    partStart = i + 1;
  }
  return capital && kind > PROSE && alphanumerics >= LONG_RUN ? Math.max(kind, UNLIKE) : kind;
}

/** The text as read, and where each of its characters starts in the original. */
interface Reading {
  text: string;
  /** Original offset of each character of `text`, then the original's length; null: the same. */
  from: number[] | null;
}

function read(original: string): Reading {
  if (!original.includes('%')) return { text: original, from: null };
  let text = '';
  const from: number[] = [];
  let at = 0;
  const copyTo = (end: number) => {
    text += original.slice(at, end);
    for (; at < end; at++) from.push(at);
  };
  for (const m of original.matchAll(ENCODED)) {
    copyTo(m.index);
    text += String.fromCharCode(parseInt(m[1], 16));
    from.push(m.index);
    at = m.index + m[0].length;
  }
  copyTo(original.length);
  from.push(original.length);
  return { text, from };
}

/** One stretch of the reading, summed up as its runs are read. */
class Stretch {
  start = -1;
  end = -1;
  /** Characters of runs that are not prose. */
  wordChars = 0;
  /** Characters of long runs, dense or unlike. */
  denseChars = 0;
  /** Characters of runs unlike the API's words. */
  unlikeChars = 0;
  key = false;

  add(text: string, start: number, end: number): void {
    if (this.start < 0) this.start = start;
    this.end = end;
    const kind = kindOf(text, start, end);
    const long = end - start >= PIECE;
    if (kind !== PROSE) this.wordChars += end - start;
    if (long && (kind === DENSE || kind === UNLIKE)) this.denseChars += end - start;
    if (kind === UNLIKE) this.unlikeChars += end - start;
    if (kind === KEY) this.key = true;
  }

  couldHoldSecret(): boolean {
    return this.key || (this.unlikeChars >= PIECE && this.wordChars >= MIN_UNLIKE) || this.denseChars >= MIN_DENSE;
  }
}

/** Do the characters between two runs keep them in one stretch? */
function joins(text: string, end: number, start: number): boolean {
  if (start - end > MAX_GAP) return false;
  for (let i = end; i < start; i++) {
    const c = text.charCodeAt(i);
    if (c === 34 || c === 47) return false;
  }
  return true;
}

/** The spans of the reading, as [start, end) pairs in order, of stretches that could hold a secret. */
function suspectSpans(text: string): number[] {
  const spans: number[] = [];
  let stretch = new Stretch();
  let start = -1;
  for (let i = 0; i <= text.length; i++) {
    if (i < text.length && inAlphabet(text.charCodeAt(i))) {
      if (start < 0) start = i;
      continue;
    }
    if (start < 0) continue;
    if (stretch.start >= 0 && !joins(text, stretch.end, start)) {
      if (stretch.couldHoldSecret()) spans.push(stretch.start, stretch.end);
      stretch = new Stretch();
    }
    stretch.add(text, start, i);
    start = -1;
  }
  if (stretch.couldHoldSecret()) spans.push(stretch.start, stretch.end);
  return spans;
}

const decode = (token: string) => token.replace(ENCODED, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** `text` with each token (alphabet characters and `%`) of PIECE characters or more that `doomed`
 * picks, in order, replaced by the marker. */
function replaceTokens(text: string, doomed: (start: number, end: number, token: string) => boolean): string {
  let out = '';
  let kept = 0;
  for (const m of text.matchAll(TOKENS)) {
    if (m[0].length < PIECE || !doomed(m.index, m.index + m[0].length, m[0])) continue;
    out += text.slice(kept, m.index) + (KEY_PREFIX_FIRST.test(decode(m[0])) ? REDACTED_KEY : REDACTED);
    kept = m.index + m[0].length;
  }
  return kept === 0 ? text : out + text.slice(kept);
}

/** What redaction finds in a text: its reading, and the spans of it that could hold a secret. */
interface Findings {
  reading: Reading;
  spans: number[];
  /** suspectPieces of the text, once asked for. */
  pieces?: Set<string>;
}

const NOTHING: Findings = { reading: { text: '', from: null }, spans: [] };
/** The texts read last, and what was found in them: one request's target is read for each member of
 * its problem that quotes it, and again for its log line. */
const recent = new Map<string, Findings>();
const RECENT = 4;

function findings(text: string): Findings {
  if (!maySuspect(text)) return NOTHING;
  let found = recent.get(text);
  if (found) return found;
  const reading = read(text);
  found = { reading, spans: suspectSpans(reading.text) };
  if (recent.size >= RECENT) recent.delete(recent.keys().next().value as string);
  recent.set(text, found);
  return found;
}

/** Every PIECE characters in a row, as read, of the long runs that redaction replaces in `context`. */
function suspectPieces(context: string): Set<string> {
  const found = findings(context);
  if (found.pieces) return found.pieces;
  const pieces = new Set<string>();
  const { text } = found.reading;
  const spans = found.spans;
  for (let s = 0; s < spans.length; s += 2) {
    for (const [run] of text.slice(spans[s], spans[s + 1]).matchAll(RUNS))
      for (let i = 0; i + PIECE <= run.length; i++) pieces.add(run.slice(i, i + PIECE));
  }
  if (found !== NOTHING) found.pieces = pieces;
  return pieces;
}

/** Replaces every key, and everything that could be a piece of a secret (see above), before text is
 * logged or echoed. Text with nothing of the kind comes back unchanged, encoding and all.
 * `context`: the whole client text `text` was taken from (a problem's instance, for its detail that
 * quotes one parameter): a piece of it replaced there is replaced here too, though here it may stand
 * alone and look like nothing. */
export function redactKeys(text: string, context?: string): string {
  let out = text;
  const { reading, spans } = findings(text);
  if (spans.length) {
    const at = (i: number) => (reading.from ? reading.from[i] : i);
    let span = 0;
    out = replaceTokens(text, (start, end) => {
      // Spans that end before this token are done with.
      while (span < spans.length && at(spans[span + 1]) <= start) span += 2;
      return span < spans.length && at(spans[span]) < end;
    });
  }
  const pieces = context === undefined ? null : suspectPieces(context);
  if (!pieces?.size) return out;
  return replaceTokens(out, (_start, _end, token) => {
    const decoded = decode(token);
    for (let i = 0; i + PIECE <= decoded.length; i++) if (pieces.has(decoded.slice(i, i + PIECE))) return true;
    return false;
  });
}

/** A key, or the start of one (the id and any of its secret), in any letter case. */
const KEY_SHAPED = /isoatlas_[a-z2-7]{8,9}_[A-Za-z0-9_-]+/gi;
/** A percent-encoded letter, digit, `_` or `-`, in either hex case, also when encoded again (`%255F`). */
const ENCODED_ALPHABET = /%(?:25)*(2[dD]|3[0-9]|[46][1-9a-fA-F]|[57][0-9aA]|5[fF])/g;

/** Replaces what is shaped like a key (percent-encoded or not): for a whole line a process writes
 * about its own work, whose client text was redacted by redactKeys where it was taken. */
export function redactKeyShapes(text: string): string {
  if (!text.includes('%') && !/isoatlas_/i.test(text)) return text;
  return text
    .replace(ENCODED_ALPHABET, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)))
    .replace(KEY_SHAPED, REDACTED_KEY);
}

/** Client text as it may be echoed or logged within `max` characters: redacted first, so the cut
 * cannot leave part of a secret behind. */
export function clip(text: string, max: number): string {
  const redacted = redactKeys(text);
  return redacted.length > max ? redacted.slice(0, max) : redacted;
}
