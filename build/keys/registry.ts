// The curators' key registry: one JSON file (mode 0600) holding, per key, its keyed hash, who it was
// issued to and why, its tier and its revocation. The key itself is printed once at issue and never
// stored. The server-side secret that keys the hash lives beside it (or in ISOATLAS_KEY_SECRET).
import { chmodSync, existsSync, mkdirSync, readFileSync, renameSync, rmSync, statSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { generateKey, hashKey, importServerSecret, newServerSecret } from '../../edge/access/key-format.js';
import { DEFAULT_ACCESS } from '../../edge/access/config.js';
import type { EdgeKeyRecord } from '../../edge/access/key-registry.js';

export interface KeyRecord extends EdgeKeyRecord {
  name: string;
  affiliation: string;
  use: string;
  created_at: string;
}

export interface RegistryFile {
  version: 1;
  keys: KeyRecord[];
}

export const registryPath = (keysDir: string) => join(keysDir, 'registry.json');
export const secretPath = (keysDir: string) => join(keysDir, 'secret');

export function loadRegistry(keysDir: string): RegistryFile {
  const path = registryPath(keysDir);
  if (!existsSync(path)) return { version: 1, keys: [] };
  const parsed = JSON.parse(readFileSync(path, 'utf8')) as RegistryFile;
  if (parsed.version !== 1 || !Array.isArray(parsed.keys)) throw new Error(`${path} is not an isoatlas key registry`);
  return parsed;
}

function writePrivate(path: string, text: string) {
  mkdirSync(dirname(path), { recursive: true, mode: 0o700 });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text, { mode: 0o600 });
  chmodSync(tmp, 0o600);
  renameSync(tmp, path); // atomic: a reader (the server) never sees half a file
}

export function saveRegistry(keysDir: string, registry: RegistryFile): void {
  writePrivate(registryPath(keysDir), `${JSON.stringify(registry, null, 2)}\n`);
}

/** The hex server secret: ISOATLAS_KEY_SECRET, else the secret file (created when `create`). */
export function readSecret(keysDir: string, opts: { create: boolean }): string | null {
  const fromEnv = process.env.ISOATLAS_KEY_SECRET;
  if (fromEnv) return fromEnv;
  const path = secretPath(keysDir);
  if (existsSync(path)) return readFileSync(path, 'utf8').trim();
  if (!opts.create) return null;
  const secret = newServerSecret();
  writePrivate(path, `${secret}\n`);
  return secret;
}

/** Serializes read-modify-write of the registry between concurrent `keys` commands: an exclusive
 * lock file, waited for up to 10 s; a lock older than a minute is taken to be left by a crash. */
async function withRegistryLock<T>(keysDir: string, change: () => Promise<T> | T): Promise<T> {
  mkdirSync(keysDir, { recursive: true, mode: 0o700 });
  const lock = join(keysDir, 'registry.lock');
  const deadline = Date.now() + 10_000;
  for (;;) {
    try {
      writeFileSync(lock, String(process.pid), { flag: 'wx', mode: 0o600 });
      break;
    } catch {
      const age = Date.now() - (statSync(lock, { throwIfNoEntry: false })?.mtimeMs ?? Date.now());
      if (age > 60_000) rmSync(lock, { force: true });
      else if (Date.now() > deadline)
        throw new Error(
          `${lock} is held by another isoatlas keys command; try again (or remove it if none is running)`,
        );
      else await new Promise((r) => setTimeout(r, 50));
    }
  }
  try {
    return await change();
  } finally {
    rmSync(lock, { force: true });
  }
}

/** Issues a key of `details.tier` whose id starts with `details.letter`, the tier's letter in the
 * access config in force (unset: the default config's letter for the tier; null: a legacy id). */
export async function issueKey(
  keysDir: string,
  details: { name: string; affiliation: string; use: string; tier: string; letter?: string | null },
  now = new Date(),
): Promise<{ key: string; record: KeyRecord }> {
  const letter = details.letter === undefined ? DEFAULT_ACCESS.tier_letters[details.tier] : details.letter;
  if (letter === undefined)
    throw new Error(
      `tier ${details.tier} has no letter in the access config's tier_letters: add one before issuing keys of it`,
    );
  const secret = await importServerSecret(readSecret(keysDir, { create: true })!);
  return withRegistryLock(keysDir, async () => {
    const registry = loadRegistry(keysDir);
    let generated = generateKey(letter);
    while (registry.keys.some((k) => k.id === generated.id)) generated = generateKey(letter);
    const record: KeyRecord = {
      id: generated.id,
      hash: await hashKey(secret, generated.key),
      tier: details.tier,
      revoked_at: null,
      name: details.name,
      affiliation: details.affiliation,
      use: details.use,
      created_at: now.toISOString(),
    };
    registry.keys.push(record);
    saveRegistry(keysDir, registry);
    return { key: generated.key, record };
  });
}

export async function revokeKey(keysDir: string, id: string, now = new Date()): Promise<KeyRecord> {
  return withRegistryLock(keysDir, () => {
    const registry = loadRegistry(keysDir);
    const record = registry.keys.find((k) => k.id === id);
    if (!record) throw new Error(`no key with id ${id} in ${registryPath(keysDir)} (see \`isoatlas keys list\`)`);
    if (!record.revoked_at) {
      record.revoked_at = now.toISOString();
      saveRegistry(keysDir, registry);
    }
    return record;
  });
}
