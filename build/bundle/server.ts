// Bundles `isoatlas-server` (edge/server/cli.ts: `serve`, `mirror`, `nginx-config`) into one ESM file with every
// package inside and no native module, for mirror operators who should not need a checkout and
// `npm ci` to serve a tree. A module that would keep the file from running alone (portable.ts) fails
// the build, naming it.
import { build } from 'esbuild';
import { readFileSync, rmSync, statSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import { notPortable } from './portable.js';

/** The size the one-file server is held to. */
export const SERVER_BUNDLE_BUDGET = 5 * 1024 * 1024;

export async function bundleServer(opts: { out: string }): Promise<{ file: string; bytes: number; gzipBytes: number }> {
  const file = resolve(opts.out);
  const version = (JSON.parse(readFileSync(join(PROJECT_ROOT, 'package.json'), 'utf8')) as { version: string }).version;
  const built = await build({
    absWorkingDir: PROJECT_ROOT,
    metafile: true,
    entryPoints: [join(PROJECT_ROOT, 'edge/server/cli.ts')],
    bundle: true,
    platform: 'node',
    target: 'node20',
    format: 'esm',
    minify: true,
    // Licences of the bundled packages travel at the end of the file.
    legalComments: 'eof',
    // ES builds first: some packages' CommonJS builds are UMD wrappers that require() files esbuild
    // cannot see (jsonc-parser's).
    mainFields: ['module', 'main'],
    outfile: file,
    define: { ISOATLAS_VERSION: JSON.stringify(version) },
    // CommonJS packages inside an ES module still call require() for Node's built-ins.
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __isoatlasRequire } from 'node:module'; const require = __isoatlasRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
  const problems = notPortable(built.metafile.inputs, PROJECT_ROOT);
  if (problems.length > 0) {
    rmSync(file, { force: true });
    throw new Error(
      `the one-file server would not run on its own, so ${file} was not kept:\n  ${problems.join('\n  ')}\n` +
        'Keep such modules out of what edge/server/cli.ts imports (build/bundle/portable.ts says why each counts)',
    );
  }
  const bytes = statSync(file).size;
  if (bytes > SERVER_BUNDLE_BUDGET)
    throw new Error(`${file} is ${bytes} bytes, over the ${SERVER_BUNDLE_BUDGET}-byte budget`);
  return { file, bytes, gzipBytes: gzipSync(readFileSync(file), { level: 9 }).length };
}
