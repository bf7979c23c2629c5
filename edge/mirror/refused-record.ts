// The objects `isoatlas serve` refused because they failed verification (`refused-objects.txt` at
// the mirror's root: one sha256 a line), so the next `isoatlas mirror` hashes them again, whatever
// the verified index says, and fetches the corrupt ones again. The index (verified-index.ts) sees
// every change made through the file system; this record covers damage below it (a bad disk), which
// only reading the bytes finds.
//   - serve appends a line per object it refused (O_APPEND: whole lines, whatever runs beside it),
//     once per object until a sync takes the record; a directory it may not write to is said once
//     and serving goes on.
//   - the sync reads the record at its start and, once it has checked those objects, takes it
//     (renamed aside, so a line appended meanwhile lands in a new record) and puts back the lines of
//     objects it did not check.
import { appendFileSync, readFileSync, renameSync, rmSync, statSync } from 'node:fs';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';

export const REFUSED_RECORD = 'refused-objects.txt';

const SHA256 = /^[0-9a-f]{64}$/;

/** serve's side: notes each refused object once. */
export class RefusedRecord {
  private readonly file: string;
  private readonly noted = new Set<string>();
  private warned = false;

  constructor(
    dir: string,
    private readonly warn: (line: string) => void,
  ) {
    this.file = join(dir, REFUSED_RECORD);
  }

  note(sha256: string): void {
    if (!SHA256.test(sha256)) return;
    // A sync took the record: what it listed was checked, so a refusal since is news again.
    if (this.noted.size > 0 && !statSync(this.file, { throwIfNoEntry: false })) this.noted.clear();
    if (this.noted.has(sha256)) return;
    try {
      appendFileSync(this.file, `${sha256}\n`);
      this.noted.add(sha256);
    } catch (err) {
      if (this.warned) return;
      this.warned = true;
      this.warn(
        `cannot note refused objects in ${this.file} (${(err as NodeJS.ErrnoException).code ?? (err as Error).message}): the next sync will not know to fetch them again; run \`isoatlas mirror --verify\` to find them`,
      );
    }
  }
}

/** The sync's side: the objects serve refused since the record was last taken. */
export function readRefused(dir: string): Set<string> {
  return new Set(linesOf(join(dir, REFUSED_RECORD)));
}

/** Takes the record once the sync has checked what it listed: lines of objects it did not check
 * (`checked` false: noted since it started, or of objects no held release lists) are put back. */
export function takeRefused(dir: string, checked: (sha256: string) => boolean): void {
  const file = join(dir, REFUSED_RECORD);
  const aside = `${file}.tmp-${process.pid}-${randomBytes(4).toString('hex')}`;
  try {
    renameSync(file, aside);
  } catch {
    return; // no record
  }
  const left = [...new Set(linesOf(aside))].filter((sha) => !checked(sha));
  if (left.length > 0) appendFileSync(file, left.map((sha) => `${sha}\n`).join(''));
  rmSync(aside, { force: true });
}

function linesOf(file: string): string[] {
  let text: string;
  try {
    text = readFileSync(file, 'latin1');
  } catch {
    return [];
  }
  return text.split('\n').filter((line) => SHA256.test(line));
}
