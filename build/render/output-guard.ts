// What `isoatlas build --out <dir>` may replace. A build swaps a whole directory in, so whatever the
// directory held goes: that is right only for a tree an earlier build rendered, and only when asked.
//   - absent or empty: fine;
//   - a tree (its manifest lists every file in it): replaced with `force` only;
//   - anything else (no manifest, or files the manifest does not list): refused, force or not.
import { existsSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { basename, dirname, join } from 'node:path';
import fg from 'fast-glob';
import { treePaths } from '../../edge/contract/tree.js';
import { loadManifest } from '../common/manifest-reader.js';
import { UsageError } from '../common/errors.js';

export async function checkBuildOutput(out: string, opts: { force: boolean }): Promise<void> {
  if (!existsSync(out)) return;
  if (!statSync(out).isDirectory())
    throw new UsageError(`--out ${out} is a file, not a directory: name a new or empty directory`);
  if (readdirSync(out).length === 0) return;
  const foreign = (what: string) =>
    new UsageError(
      `--out ${out} is not empty and is not an isoatlas tree (${what}): building there would delete it. Name a new or empty directory; nothing was changed.`,
    );
  if (!existsSync(join(out, treePaths.manifest))) throw foreign(`no ${treePaths.manifest}`);
  let listed: Set<string>;
  try {
    const manifest = await loadManifest(
      async (path) => (existsSync(join(out, path)) ? readFileSync(join(out, path)) : null),
      `${out}/`,
    );
    listed = new Set([
      treePaths.manifest,
      ...manifest.shards.map((s) => s.entry.path),
      ...manifest.entries.map((e) => e.path),
    ]);
  } catch (err) {
    throw foreign(`its manifest does not read: ${(err as Error).message}`);
  }
  const extra = (await fg('**', { cwd: out, dot: true, onlyFiles: true })).filter((path) => !listed.has(path)).sort();
  if (extra.length)
    throw foreign(`${extra.length} file(s) its manifest does not list, e.g. ${extra.slice(0, 3).join(', ')}`);
  if (!opts.force)
    throw new UsageError(
      `--out ${out} holds a tree from an earlier build: pass --force to replace it, or name a new directory`,
    );
}

/** The names a build of `out` works under beside it, each ending in its process id: the staging tree
 * (`<out>.partial-<pid>`) and the two scratch databases (`<out>.manifest-<pid>.sqlite`,
 * `<out>.tables-<pid>.sqlite`, with SQLite's journal). */
export const stagingName = (out: string, pid: number) => `${out}.partial-${pid}`;
export const scratchName = (out: string, kind: 'manifest' | 'tables', pid: number) => `${out}.${kind}-${pid}.sqlite`;

/** Whether a process with this id may run: only "no such process" says it does not (one we may not
 * signal runs, and an id no process can have was not a build's). */
function running(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    return (err as NodeJS.ErrnoException).code !== 'ESRCH';
  }
}

/** Removes what builds of `out` that were killed left beside it (a killed build cannot clean up: at
 * human scale its staging tree and scratch files hold gigabytes), only under the names a build works
 * under and only for a process id that no longer runs. Returns the process ids whose files went. */
export function removeInterruptedBuilds(out: string): number[] {
  const dir = dirname(out);
  if (!existsSync(dir)) return [];
  const escaped = basename(out).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  const name = new RegExp(`^${escaped}\\.(?:partial-(\\d+)|(?:manifest|tables)-(\\d+)\\.sqlite(?:-journal)?)$`);
  const removed = new Set<number>();
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const m = name.exec(entry.name);
    if (!m) continue;
    const pid = Number(m[1] ?? m[2]);
    // The staging tree is a directory and the scratch databases are files: anything else is not ours.
    if ((m[1] !== undefined) !== entry.isDirectory() || pid === process.pid || running(pid)) continue;
    rmSync(join(dir, entry.name), { recursive: true, force: true });
    removed.add(pid);
  }
  return [...removed].sort((a, b) => a - b);
}
