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

const METER_ENTRY = join(PROJECT_ROOT, 'edge/cloudfront/meter-entry.ts');

/** Bundles the day meter (a regular Lambda function) into outDir/index.js, its AWS SDK clients
 * included: the runtime's bundled SDK is not promised to carry the KeyValueStore client or SigV4A. */
export async function bundleMeter(opts: { outDir: string }): Promise<EdgeBundle> {
  const outDir = resolve(opts.outDir);
  mkdirSync(outDir, { recursive: true });
  const file = join(outDir, 'index.js');
  await build({
    entryPoints: [METER_ENTRY],
    bundle: true,
    platform: 'node',
    target: 'node22',
    format: 'cjs',
    minify: true,
    legalComments: 'none',
    outfile: file,
    logLevel: 'warning',
  });
  writeFileSync(join(outDir, 'package.json'), `${JSON.stringify({ type: 'commonjs', main: 'index.js' })}\n`);
  const bytes = statSync(file).size;
  return { file, bytes, gzipBytes: gzipSync(readFileSync(file), { level: 9 }).length };
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
