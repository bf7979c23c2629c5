// `engines` is true: every package npm installs from the project's locks runs on every Node the
// project declares, so `npm ci` on a declared Node never warns EBADENGINE. Checked on the lowest
// version of each declared range (`^20.19.0 || >=22.12.0` → 20.19.0 and 22.12.0) and on the Node
// running the tests. Optional packages are left out: npm skips one whose engines do not match.
import { describe, expect, it } from 'vitest';
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import semver from 'semver';

const ROOT = join(__dirname, '..');
const readJson = (path: string) => JSON.parse(readFileSync(join(ROOT, path), 'utf8'));

interface LockEntry {
  version?: string;
  optional?: boolean;
  engines?: { node?: string } | string[];
}

const declared: string = readJson('package.json').engines.node;
const lowest = new semver.Range(declared).set.map(
  (comparators) => semver.minVersion(new semver.Range(comparators.map(String).join(' ')))!.version,
);
const nodes = [...new Set([...lowest, process.versions.node])];
const locks = ['package-lock.json', 'infra/package-lock.json'].filter((path) => existsSync(join(ROOT, path)));

/** The packages of a lock that need a Node these versions do not all satisfy. */
function incompatible(lock: string): string[] {
  const packages: Record<string, LockEntry> = readJson(lock).packages;
  const out: string[] = [];
  for (const [path, entry] of Object.entries(packages)) {
    const range = Array.isArray(entry.engines) ? undefined : entry.engines?.node;
    if (path === '' || entry.optional || !range) continue;
    const bad = nodes.filter((node) => !semver.satisfies(node, range));
    if (bad.length) out.push(`${path}@${entry.version} needs node ${range}, not ${bad.join(', ')}`);
  }
  return out;
}

describe('engines', () => {
  it('declares a Node range whose lowest versions are found, and the running Node is in it', () => {
    expect(lowest.length).toBeGreaterThan(0);
    expect(semver.satisfies(process.versions.node, declared), `node ${process.versions.node} vs ${declared}`).toBe(
      true,
    );
  });

  it.each(locks)('every package of %s runs on every declared Node', (lock) => {
    expect(incompatible(lock)).toEqual([]);
  });

  it('infra/, installed on its own, declares the same Node range', () => {
    expect(locks).toContain('infra/package-lock.json');
    expect(readJson('infra/package.json').engines.node).toBe(declared);
  });
});
