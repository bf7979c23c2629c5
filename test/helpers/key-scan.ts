// Key hygiene over the whole test run: everything the run's servers print (test/helpers/server.ts)
// and every console line of the tests (key-scan-reporter.ts) is appended under .isoatlas/test-logs/,
// and the global teardown (key-scan-setup.ts) fails the run if any of it holds key material.
import { appendFileSync, readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/** A key or any long enough piece of one: the id with 20+ characters of its secret, in any letter
 * case (what redactKeys removes; a redacted key reads `isoatlas_[redacted]` and does not match). */
export const KEY_MATERIAL = /isoatlas_([a-z2-7]{8,9})_[A-Za-z0-9_-]{20,}/gi;
/** Percent-decoding stops after this many rounds (a key encoded twice, `%2549`, is still a key). */
const DECODINGS = 3;

const decodedOnce = (text: string) =>
  text.replace(/%([0-9a-fA-F]{2})/g, (_, hex: string) => String.fromCharCode(parseInt(hex, 16)));

/** The run's log directory (set by the global setup), or null outside a vitest run. */
export function testLogDir(): string | null {
  return process.env.ISOATLAS_TEST_LOG_DIR || null;
}

/** Appends to one of the run's logs; a no-op outside a vitest run. */
export function appendTestLog(name: string, text: string): void {
  const dir = testLogDir();
  if (dir) appendFileSync(join(dir, name), text);
}

export interface KeyFinding {
  file: string;
  line: number;
  /** The key id only: a finding is reported without the key itself. */
  id: string;
}

/** Where key material appears in the files of `dir`. */
export function scanForKeys(dir: string): KeyFinding[] {
  const findings: KeyFinding[] = [];
  for (const file of readdirSync(dir)) {
    const lines = readFileSync(join(dir, file), 'utf8').split('\n');
    lines.forEach((raw, i) => {
      // Percent-decoded first, until nothing changes: an encoded key (isoatlas%5F…) is still a key.
      let text = raw;
      for (let round = 0; round < DECODINGS && text.includes('%'); round++) text = decodedOnce(text);
      for (const m of text.matchAll(KEY_MATERIAL)) findings.push({ file, line: i + 1, id: m[1].toLowerCase() });
    });
  }
  return findings;
}
