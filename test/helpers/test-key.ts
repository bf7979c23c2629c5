// An API key issued by `isoatlas keys issue` into a test's own registry, for the tests that look for
// its pieces where they must not be (the nginx front's answers and logs).
import { join } from 'node:path';
import { keyId } from '../../edge/access/key-format.js';
import { runCli } from './run.js';

const ROOT = join(__dirname, '..', '..');

export interface IssuedKey {
  key: string;
  id: string;
  /** Everything after the id and its underscore. */
  secret: string;
}

export async function issueTestKey(keysDir: string, use: string): Promise<IssuedKey> {
  const issued = await runCli(
    ['keys', 'issue', '--name', 'Front Test', '--affiliation', 'Test Lab', '--use', use, '--keys-dir', keysDir],
    { cwd: ROOT },
  );
  if (issued.status !== 0) throw new Error(`isoatlas keys issue failed (${issued.status}): ${issued.stderr}`);
  const key = issued.stdout.trim();
  const id = keyId(key);
  if (id === null) throw new Error('isoatlas keys issue printed something that is not a key');
  return { key, id, secret: key.slice(`isoatlas_${id}_`.length) };
}
