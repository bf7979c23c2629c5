// Section 5: what the CDN runs, by size: the edge bundle (esbuild, as `isoatlas bundle-edge` builds
// it) against the Lambda@Edge budget the project holds it to, and the key gate (a CloudFront
// Function) against CloudFront's 10 KB limit on function code.
import { join } from 'node:path';
import { bundleEdge, EDGE_BUNDLE_BUDGET } from '../build/bundle-edge.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { KEY_GATE_MAX_BYTES, keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import type { BenchContext } from './context.js';
import type { SectionReport, Target } from './report.js';
import { fmt } from './stats.js';

export async function benchBundle(ctx: BenchContext): Promise<SectionReport> {
  const variants = [
    { name: 'HTTP origin, no access control', config: { originBaseUrl: 'https://origin.example.org' } },
    { name: 'S3 origin (the CDN deployment)', config: { s3: { bucket: 'isoatlas-bench', region: 'us-east-1' }, structureBaseUrl: 'https://cdn.example.org' } },
  ];
  const rows: string[][] = [];
  const targets: Target[] = [];
  let deployedGzip = 0;
  for (const [i, v] of variants.entries()) {
    const sizes = new Set<string>();
    let last = { bytes: 0, gzipBytes: 0 };
    // The bundle is deterministic; the runs check that rather than average anything.
    for (let run = 0; run < Math.min(ctx.opts.runs, 3); run++) {
      last = await bundleEdge({ outDir: join(ctx.tmp, `bundle-${i}-${run}`), ...v.config });
      sizes.add(`${last.bytes}/${last.gzipBytes}`);
    }
    if (sizes.size !== 1) throw new Error(`edge bundle size differs between identical builds: ${[...sizes].join(', ')}`);
    rows.push([v.name, `${fmt(last.bytes)} (${(last.bytes / 1024).toFixed(1)} KiB)`, `${fmt(last.gzipBytes)} (${(last.gzipBytes / 1024).toFixed(1)} KiB)`, `${((100 * last.gzipBytes) / EDGE_BUNDLE_BUDGET).toFixed(1)}%`]);
    deployedGzip = last.gzipBytes; // the last variant is the CDN deployment
    targets.push({ what: `${v.name}: gzipped size`, target: `≤ ${fmt(EDGE_BUNDLE_BUDGET)} bytes (1 MiB)`, measured: fmt(last.gzipBytes), met: last.gzipBytes <= EDGE_BUNDLE_BUDGET });
    ctx.log(`  ${v.name}: ${fmt(last.bytes)} bytes, ${fmt(last.gzipBytes)} gzipped`);
  }
  for (const mode of ['open', 'key-required'] as const) {
    const bytes = Buffer.byteLength(keyGateCode(keyGateSettings(resolveAccessConfig({}, mode))));
    rows.push([`key gate (CloudFront Function), ${mode}`, `${fmt(bytes)} (${(bytes / 1024).toFixed(1)} KiB)`, '–', `${((100 * bytes) / KEY_GATE_MAX_BYTES).toFixed(1)}% of 10 KB`]);
    targets.push({ what: `key gate, ${mode}: code size`, target: `≤ ${fmt(KEY_GATE_MAX_BYTES)} bytes (CloudFront's limit)`, measured: fmt(bytes), met: bytes <= KEY_GATE_MAX_BYTES });
  }
  return {
    id: 'bundle',
    title: '5. Edge code size',
    method: '`bundleEdge` (build/bundle-edge.ts: esbuild, minified CommonJS for Node 22, `@aws-sdk/*` left to the Lambda runtime) in two configurations; gzip level 9 stands in for the deployment zip. Sizes are deterministic (checked over repeated builds).',
    tables: [{ headers: ['configuration', 'bytes', 'gzipped', 'of its limit'], rows }],
    targets,
    notes: [
      'The Lambda@Edge limit is 1 MB zipped for viewer-request functions (50 MB for origin-request); the project holds the edge to the stricter one, though it now runs at origin request only.',
      'The key gate is deployed as source (no minifier), so its size is that of edge/cloudfront/key-gate-function.js with its settings.',
    ],
    headline: `edge bundle ${(deployedGzip / 1024).toFixed(1)} KiB gzipped`,
  };
}
