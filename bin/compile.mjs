#!/usr/bin/env node
// Compiles the `isoatlas` command ahead of time: build/cli.ts and everything it imports, bundled by
// esbuild into dist/cli.mjs (packages stay external), so a command starts without compiling
// TypeScript. `npm ci` runs it (prepare), and so do `npm start`, `npm test` and `npm run bench`.
import { build } from 'esbuild';
import { existsSync, readdirSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

export async function compileCli() {
  const dist = fileURLToPath(new URL('../dist', import.meta.url));
  // The previous build's files (their chunk names change with their content); dist/edge and anything
  // else in dist/ is not ours to delete.
  if (existsSync(dist)) for (const name of readdirSync(dist)) if (/\.mjs(\.map)?$/.test(name)) rmSync(join(dist, name));
  await build({
    entryPoints: [fileURLToPath(new URL('../build/cli.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    // Each command's modules in chunks of their own, loaded when the command runs.
    splitting: true,
    outdir: dist,
    outExtension: { '.js': '.mjs' },
    entryNames: '[name]',
    // Chunks beside cli.mjs: every module sits one level below the project root, as in build/.
    chunkNames: '[name]-[hash]',
    sourcemap: 'linked',
    logLevel: 'warning',
  });
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await compileCli();
