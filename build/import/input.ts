// Reading curated input files: plain or gzipped, line by line, with errors that say where.
import { BadInputError } from '../common/errors.js';
import { createReadStream, statSync } from 'node:fs';
import { basename } from 'node:path';
import { startProgress } from '../common/progress.js';
import { createHash } from 'node:crypto';
import { createInterface } from 'node:readline';
import { createGunzip } from 'node:zlib';
import { pipeline } from 'node:stream';

/** A problem in an input file. The message names the file, the line and the problem, so a curator
 * can open the file and fix it without reading our code. */
export class InputError extends BadInputError {
  constructor(
    readonly file: string,
    readonly line: number | null,
    readonly problem: string,
    readonly column?: string,
  ) {
    const where = line === null ? file : `${file}:${line}`;
    super(`${where}: ${column ? `column "${column}": ` : ''}${problem}`);
    this.name = 'InputError';
  }
}

/** Files from this size on show their reading's progress (by bytes read). */
const PROGRESS_FROM_BYTES = 16 * 1024 * 1024;
const MIB = 1024 * 1024;

/** Yields [lineNumber, text] for each line (1-based), transparently gunzipping `.gz` files. A large
 * file's reading shows progress (build/common/progress.ts), in MiB of the file as stored. */
export async function* readLines(
  path: string,
  progressOf: typeof startProgress = startProgress,
): AsyncGenerator<[number, string]> {
  const raw = createReadStream(path);
  // pipeline passes an error of either stream to the other (readline reports it) and keeps listening
  // after the reader stopped, so a truncated file's late error is never an unhandled 'error' event.
  const stream = path.endsWith('.gz') ? pipeline(raw, createGunzip(), () => {}) : raw;
  const size = fileSize(path);
  if (size >= PROGRESS_FROM_BYTES) {
    const total = Math.ceil(size / MIB);
    const progress = progressOf(`reading ${basename(path)} (MiB)`, total);
    let counted = 0;
    const count = (mib: number) => {
      progress.tick(mib - counted);
      counted = mib;
    };
    raw.on('data', () => count(Math.floor(raw.bytesRead / MIB)));
    raw.once('end', () => {
      count(total);
      progress.stop();
    });
    raw.once('close', () => progress.stop()); // also when the reading stops early
  }
  const lines = createInterface({ input: stream, crlfDelay: Infinity });
  let n = 0;
  try {
    for await (const line of lines) {
      n += 1;
      yield [n, line.endsWith('\r') ? line.slice(0, -1) : line];
    }
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    if (code === 'ENOENT') throw new InputError(path, null, 'file not found');
    if (code === 'Z_DATA_ERROR' || code === 'Z_BUF_ERROR')
      throw new InputError(path, n + 1, 'not valid gzip data (truncated or corrupt file?)');
    throw err;
  } finally {
    // Closed on every path: the end, an error, or a reader that stopped early (a header read).
    lines.close();
    stream.destroy();
    raw.destroy();
  }
}

/** Tab-separated file with a header row: yields each row as a record keyed by column name.
 * `required` columns must be present; `allowed` (when given) lists every column the format knows,
 * and any other column is an error — the documented track formats are strict so typos surface. */
export async function* readTsv(
  path: string,
  opts: { required: readonly string[]; allowed?: readonly string[]; separator?: string },
): AsyncGenerator<{ line: number; row: Record<string, string> }> {
  const sep = opts.separator ?? '\t';
  let header: string[] | null = null;
  for await (const [line, text] of readLines(path)) {
    if (text === '' || (header === null && text.startsWith('#'))) continue;
    const fields = text.split(sep);
    if (header === null) {
      header = fields;
      const missing = opts.required.filter((c) => !header!.includes(c));
      if (missing.length)
        throw new InputError(
          path,
          line,
          `missing required column(s): ${missing.join(', ')} (header has: ${header.join(', ')})`,
        );
      if (opts.allowed) {
        const unknown = header.filter((c) => !opts.allowed!.includes(c));
        if (unknown.length)
          throw new InputError(
            path,
            line,
            `unknown column(s): ${unknown.join(', ')}; this format has: ${opts.allowed.join(', ')}`,
          );
      }
      const dup = header.find((c, i) => header!.indexOf(c) !== i);
      if (dup) throw new InputError(path, line, `column "${dup}" appears twice in the header`);
      continue;
    }
    if (fields.length !== header.length) {
      throw new InputError(
        path,
        line,
        `expected ${header.length} tab-separated fields (as in the header), found ${fields.length}`,
      );
    }
    const row: Record<string, string> = {};
    header.forEach((name, i) => (row[name] = fields[i]));
    yield { line, row };
  }
  if (header === null) throw new InputError(path, null, 'file is empty: expected a header row');
}

function fileSize(path: string): number {
  try {
    return statSync(path).size;
  } catch {
    return 0; // reading it says what is wrong
  }
}

/** SHA-256 of a file's bytes (as stored, compressed or not): recorded as the provenance of an import. */
export async function sha256File(path: string): Promise<string> {
  const hash = createHash('sha256');
  for await (const chunk of createReadStream(path)) hash.update(chunk as Buffer);
  return hash.digest('hex');
}

/** Parsers for typed cells; each throws an InputError naming the column. */
export function cellParsers(file: string, line: number) {
  const fail = (column: string, problem: string): never => {
    throw new InputError(file, line, problem, column);
  };
  const isNull = (v: string) => v === '' || v === 'NA' || v === 'na' || v === 'None';
  return {
    fail,
    isNull,
    int(column: string, v: string, opts: { min?: number; nullable?: boolean } = {}): number | null {
      if (isNull(v)) return opts.nullable ? null : fail(column, 'a value is required');
      if (!/^-?\d+$/.test(v)) return fail(column, `expected an integer, found "${v}"`);
      const n = Number(v);
      if (opts.min !== undefined && n < opts.min) fail(column, `expected an integer ≥ ${opts.min}, found ${n}`);
      return n;
    },
    num(column: string, v: string, opts: { min?: number; max?: number; nullable?: boolean } = {}): number | null {
      if (isNull(v)) return opts.nullable ? null : fail(column, 'a value is required');
      const n = Number(v);
      if (!Number.isFinite(n) || v.trim() === '') return fail(column, `expected a number, found "${v}"`);
      if (opts.min !== undefined && n < opts.min) fail(column, `expected a number ≥ ${opts.min}, found ${n}`);
      if (opts.max !== undefined && n > opts.max) fail(column, `expected a number ≤ ${opts.max}, found ${n}`);
      return n;
    },
    text(column: string, v: string, opts: { nullable?: boolean } = {}): string | null {
      if (isNull(v)) return opts.nullable ? null : fail(column, 'a value is required');
      return v;
    },
  };
}
