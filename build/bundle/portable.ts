// What keeps a bundle from running alone, as one file copied anywhere: a native module (a compiled
// `.node` file tied to one Node ABI, found beside the package at run time: none is inside the
// bundle), or a module that finds files by `__dirname` or `__filename`, which an ES module does not
// have (a bundled better-sqlite3 failed so: its loader, `bindings`, reads `__filename`). Read from
// esbuild's metafile: every module the bundle holds, and what imports it.
import { transformSync, type Loader } from 'esbuild';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve, sep } from 'node:path';

/** Modules that name `__dirname` only on paths the one-file server never takes: pino's transports
 * start a worker from a file beside them, and the server logs through pino.destination
 * (edge/server/logger.ts), no transport. */
const INERT = ['pino/lib/transport.js', 'thread-stream/index.js'];

/** Packages that load a compiled addon, or find one, at run time. */
const ADDON_LOADERS = new Set([
  'bindings',
  'node-gyp-build',
  'prebuild-install',
  'node-pre-gyp',
  '@mapbox/node-pre-gyp',
]);

const NAMES_DIRNAME = /\b__(dirname|filename)\b/;
/** What esbuild puts where a module reads `__dirname` or `__filename` as a free variable (not a
 * comment, a string, a property or a variable of its own). */
const MARK = '__isoatlas_free_dirname__';

/** The modules of a bundle as esbuild's metafile lists them (paths from `root`). */
export type MetafileInputs = Record<string, { imports: { path: string }[] }>;

/** Why the bundle of `inputs` would not run alone, one line per package or module at fault, each
 * with a module that brings it in; empty when nothing does. */
export function notPortable(inputs: MetafileInputs, root: string): string[] {
  const problems = new Map<string, string>();
  const packages = new Map<string, string | null>();
  for (const input of Object.keys(inputs)) {
    const file = resolve(root, input);
    if (!existsSync(file)) continue; // esbuild's own namespaces (a disabled module)
    const pkg = packageOf(file);
    if (file.endsWith('.node')) problems.set(input, `${input}: a native module`);
    else if (pkg) {
      if (!packages.has(pkg.dir)) packages.set(pkg.dir, nativeReason(pkg.dir, pkg.name));
      const why = packages.get(pkg.dir);
      if (why && !problems.has(pkg.dir)) problems.set(pkg.dir, `${why}${broughtBy(inputs, root, pkg.dir)}`);
    }
    const inert = pkg && INERT.some((m) => file.endsWith(`${sep}node_modules${sep}${m.split('/').join(sep)}`));
    if (!inert && readsDirname(file))
      problems.set(
        `${input} dirname`,
        `${input} finds files by __dirname or __filename, which an ES module does not have${broughtBy(inputs, root, file)}`,
      );
  }
  return [...problems.values()];
}

/** ", imported by <module>": the first module outside `within` (a package or a file) that imports
 * one inside it. */
function broughtBy(inputs: MetafileInputs, root: string, within: string): string {
  const inside = (path: string) => {
    const file = resolve(root, path);
    return file === within || file.startsWith(`${within}${sep}`);
  };
  for (const [input, { imports }] of Object.entries(inputs))
    if (!inside(input) && imports.some((i) => inside(i.path))) return `, imported by ${input}`;
  return '';
}

/** Whether a module reads `__dirname` or `__filename` as a free variable. */
function readsDirname(file: string): boolean {
  const text = readFileSync(file, 'utf8');
  if (!NAMES_DIRNAME.test(text)) return false;
  const loader: Loader = /\.tsx?$/.test(file) ? 'ts' : file.endsWith('.json') ? 'json' : 'js';
  const out = transformSync(text, { loader, define: { __dirname: MARK, __filename: MARK } }).code;
  return out.includes(MARK);
}

/** The package a file of node_modules belongs to. */
function packageOf(file: string): { dir: string; name: string } | null {
  const marker = `${sep}node_modules${sep}`;
  const at = file.lastIndexOf(marker);
  if (at < 0) return null;
  const parts = file.slice(at + marker.length).split(sep);
  const name = parts[0].startsWith('@') ? `${parts[0]}/${parts[1]}` : parts[0];
  return { dir: file.slice(0, at + marker.length) + name.split('/').join(sep), name };
}

/** Why a package is native (builds an addon, or loads one), or null. */
function nativeReason(dir: string, name: string): string | null {
  if (ADDON_LOADERS.has(name)) return `${name} loads a compiled addon from beside itself`;
  if (existsSync(join(dir, 'binding.gyp'))) return `${name} is a native module (it has a binding.gyp)`;
  let manifest: { gypfile?: boolean; dependencies?: Record<string, string> };
  try {
    manifest = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'));
  } catch {
    return null;
  }
  if (manifest.gypfile) return `${name} is a native module (gypfile)`;
  const loader = Object.keys(manifest.dependencies ?? {}).find((d) => ADDON_LOADERS.has(d));
  return loader ? `${name} is a native module (it depends on ${loader})` : null;
}
