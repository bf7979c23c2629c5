// Bundles the edge function (edge/lambda-entry.ts) into one minified CommonJS file for Lambda@Edge
// with esbuild, and reports its size against the Lambda@Edge limit for viewer/origin triggers.
import { build } from 'esbuild';
import { mkdirSync, statSync, writeFileSync } from 'node:fs';
import { gzipSync } from 'node:zlib';
import { readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { PROJECT_ROOT } from '../paths.js';
import type { EdgeBundleConfig } from '../../edge/lambda-entry.js';

const ENTRY = join(PROJECT_ROOT, 'edge/lambda-entry.ts');
/** Lambda@Edge: 1 MB zipped for viewer-request functions (50 MB for origin-request); we hold the
 * edge to the stricter budget so it can move to either trigger. */
export const EDGE_BUNDLE_BUDGET = 1024 * 1024;

export interface EdgeBundle {
  file: string;
  bytes: number;
  gzipBytes: number;
}

/** The day meter's functions, each bundled into a directory of its own under bundleMeter's outDir:
 * what runs under the mark writer's role (the store's write permission) is the writer's small module
 * alone, none of the meter's log parsing, and neither package carries the other's SDK clients. */
export const METER_FUNCTIONS = {
  meter: { dir: 'meter', entry: 'edge/cloudfront/meter-entry.ts' },
  markWriter: { dir: 'mark-writer', entry: 'edge/cloudfront/mark-writer-entry.ts' },
} as const;

/** Bundles the day meter and its mark writer (regular Lambda functions) into outDir/<dir>/index.js
 * (METER_FUNCTIONS), their AWS SDK clients included: the runtime's bundled SDK is not promised to
 * carry the KeyValueStore client or SigV4A. */
export async function bundleMeter(opts: { outDir: string }): Promise<Record<keyof typeof METER_FUNCTIONS, EdgeBundle>> {
  const outDir = resolve(opts.outDir);
  const fns = Object.entries(METER_FUNCTIONS) as [keyof typeof METER_FUNCTIONS, { dir: string; entry: string }][];
  await build({
    entryPoints: Object.fromEntries(fns.map(([, f]) => [`${f.dir}/index`, join(PROJECT_ROOT, f.entry)])),
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    outdir: outDir,
    logLevel: 'warning',
  });
  const bundles = fns.map(([name, f]) => {
    const file = join(outDir, f.dir, 'index.js');
    writeFileSync(join(outDir, f.dir, 'package.json'), `${JSON.stringify({ type: 'commonjs', main: 'index.js' })}\n`);
    const bundle: EdgeBundle = {
      file,
      bytes: statSync(file).size,
      gzipBytes: gzipSync(readFileSync(file), { level: 9 }).length,
    };
    return [name, bundle] as const;
  });
  return Object.fromEntries(bundles) as Record<keyof typeof METER_FUNCTIONS, EdgeBundle>;
}

export async function bundleEdge(opts: { outDir: string } & EdgeBundleConfig): Promise<EdgeBundle> {
  const outDir = resolve(opts.outDir);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, 'index.js');
  await build({
    entryPoints: [ENTRY],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    // The Lambda Node.js runtime ships AWS SDK v3; bundling the DynamoDB client would add ~630 KiB.
    external: ['@aws-sdk/*'],
    outfile: file,
    define: {
      __ISOATLAS_EDGE_CONFIG__: JSON.stringify({ ...opts, outDir: undefined } satisfies EdgeBundleConfig & {
        outDir: undefined;
      }),
    },
    logLevel: 'warning',
  });
  // The package is ESM; the deployment package says its own index.js is CommonJS.
  writeFileSync(join(outDir, 'package.json'), `${JSON.stringify({ type: 'commonjs', main: 'index.js' })}\n`);
  const bytes = statSync(file).size;
  const gzipBytes = gzipSync(readFileSync(file), { level: 9 }).length;
  if (gzipBytes > EDGE_BUNDLE_BUDGET)
    throw new Error(
      `edge bundle is ${gzipBytes} bytes compressed, over the ${EDGE_BUNDLE_BUDGET}-byte Lambda@Edge budget`,
    );
  return { file, bytes, gzipBytes };
}
