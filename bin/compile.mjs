#!/usr/bin/env node
// Compiles the `isoatlas` command ahead of time: build/cli.ts and everything it imports, bundled by
// esbuild into dist/cli.mjs (packages stay external), so a command starts without compiling
// TypeScript. `npm ci` runs it (prepare), and so do `npm start`, `npm test` and `npm run bench`.
import { build } from 'esbuild';
import { fileURLToPath } from 'node:url';

export const CLI_OUT = fileURLToPath(new URL('../dist/cli.mjs', import.meta.url));

export async function compileCli() {
  const result = await build({
    entryPoints: [fileURLToPath(new URL('../build/cli.ts', import.meta.url))],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    packages: 'external',
    // Each command's modules in chunks of their own, loaded when the command runs.
    splitting: true,
    outdir: fileURLToPath(new URL('../dist', import.meta.url)),
    outExtension: { '.js': '.mjs' },
    entryNames: '[name]',
    // Chunks beside cli.mjs: every module sits one level below the project root, as in build/.
    chunkNames: '[name]-[hash]',
    metafile: true,
    sourcemap: 'linked',
    logLevel: 'warning',
  });
  return result.metafile;
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await compileCli();
