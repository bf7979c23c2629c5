// Section 5: what the CDN runs, by size: the edge bundle (esbuild, as `isoatlas bundle-edge` builds
// it) against the Lambda@Edge budget the project holds it to, and the key gate (a CloudFront
// Function) against CloudFront's 10 KB limit on function code; and what a mirror operator downloads,
// the one-file server, by size and by the time from starting it to its first answer.
import { join } from 'node:path';
import { spawn } from 'node:child_process';
import { copyFileSync, mkdirSync } from 'node:fs';
import { bundleEdge, EDGE_BUNDLE_BUDGET } from '../build/bundle/edge.js';
import { bundleServer, SERVER_BUNDLE_BUDGET } from '../build/bundle/server.js';
import { resolveAccessConfig } from '../edge/access/config.js';
import { KEY_GATE_MAX_BYTES, keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import type { BenchContext } from './context.js';
import type { SectionReport, Target } from './report.js';
import { fmt } from './stats.js';

export async function benchBundle(ctx: BenchContext): Promise<SectionReport> {
  const variants = [
    { name: 'HTTP origin, no access control', config: { originBaseUrl: 'https://origin.example.org' } },
    {
      name: 'S3 origin (the CDN deployment)',
      config: { s3: { bucket: 'isoatlas-bench', region: 'us-east-1' }, structureBaseUrl: 'https://cdn.example.org' },
    },
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
    if (sizes.size !== 1)
      throw new Error(`edge bundle size differs between identical builds: ${[...sizes].join(', ')}`);
    rows.push([
      v.name,
      `${fmt(last.bytes)} (${(last.bytes / 1024).toFixed(1)} KiB)`,
      `${fmt(last.gzipBytes)} (${(last.gzipBytes / 1024).toFixed(1)} KiB)`,
      `${((100 * last.gzipBytes) / EDGE_BUNDLE_BUDGET).toFixed(1)}%`,
    ]);
    deployedGzip = last.gzipBytes; // the last variant is the CDN deployment
    targets.push({
      what: `${v.name}: gzipped size`,
      target: `≤ ${fmt(EDGE_BUNDLE_BUDGET)} bytes (1 MiB)`,
      measured: fmt(last.gzipBytes),
      met: last.gzipBytes <= EDGE_BUNDLE_BUDGET,
    });
    ctx.log(`  ${v.name}: ${fmt(last.bytes)} bytes, ${fmt(last.gzipBytes)} gzipped`);
  }
  for (const mode of ['open', 'key-required'] as const) {
    const bytes = Buffer.byteLength(keyGateCode(keyGateSettings(resolveAccessConfig({}, mode))));
    rows.push([
      `key gate (CloudFront Function), ${mode}`,
      `${fmt(bytes)} (${(bytes / 1024).toFixed(1)} KiB)`,
      '–',
      `${((100 * bytes) / KEY_GATE_MAX_BYTES).toFixed(1)}% of 10 KB`,
    ]);
    targets.push({
      what: `key gate, ${mode}: code size`,
      target: `≤ ${fmt(KEY_GATE_MAX_BYTES)} bytes (CloudFront's limit)`,
      measured: fmt(bytes),
      met: bytes <= KEY_GATE_MAX_BYTES,
    });
  }
  // The one-file server, copied alone into an empty directory, started on the demo tree: the time
  // until it answers a gene record (the median of the runs).
  const server = await bundleServer({ out: join(ctx.tmp, 'server-build/isoatlas-server.mjs') });
  const demo = await ctx.demo();
  const starts: number[] = [];
  for (let run = 0; run < Math.max(3, Math.min(ctx.opts.runs, 5)); run++) {
    const opt = join(ctx.tmp, `server-opt-${run}`);
    mkdirSync(opt, { recursive: true });
    copyFileSync(server.file, join(opt, 'isoatlas-server.mjs'));
    starts.push(await firstAnswerMs(join(opt, 'isoatlas-server.mjs'), demo.tree, join(opt, 'keys')));
  }
  starts.sort((a, b) => a - b);
  const start = starts[Math.floor(starts.length / 2)];
  rows.push([
    'one-file server (isoatlas-server.mjs)',
    `${fmt(server.bytes)} (${(server.bytes / 1e6).toFixed(2)} MB)`,
    `${fmt(server.gzipBytes)} (${(server.gzipBytes / 1e6).toFixed(2)} MB)`,
    `${((100 * server.bytes) / SERVER_BUNDLE_BUDGET).toFixed(1)}% of 5 MiB`,
  ]);
  targets.push({
    what: 'one-file server: size',
    target: `≤ ${fmt(SERVER_BUNDLE_BUDGET)} bytes (5 MiB)`,
    measured: fmt(server.bytes),
    met: server.bytes <= SERVER_BUNDLE_BUDGET,
  });
  ctx.log(
    `  one-file server: ${fmt(server.bytes)} bytes; first answer after ${start.toFixed(0)} ms (median of ${starts.length})`,
  );
  return {
    id: 'bundle',
    title: '5. Edge code size, and the one-file server',
    method:
      '`bundleEdge` (build/bundle/edge.ts: esbuild, minified CommonJS for Node 22, `@aws-sdk/*` left to the Lambda runtime) in two configurations; gzip level 9 stands in for the deployment zip. Sizes are deterministic (checked over repeated builds).',
    tables: [{ headers: ['configuration', 'bytes', 'gzipped', 'of its limit'], rows }],
    targets,
    notes: [
      `One-file server: from \`node isoatlas-server.mjs serve --dir <demo tree>\` in an empty directory to its first 200 for /api/v1/genes/PRR5: ${start.toFixed(0)} ms (median of ${starts.length} starts: ${starts.map((v) => v.toFixed(0)).join(', ')} ms); it downloads as one ${(server.gzipBytes / 1e6).toFixed(2)} MB gzipped file, with no \`npm ci\`.`,
      'The Lambda@Edge limit is 1 MB zipped for viewer-request functions (50 MB for origin-request); the project holds the edge to the stricter one, though it now runs at origin request only.',
      'The key gate is deployed as source (no minifier), so its size is that of edge/cloudfront/key-gate-function.js with its settings.',
    ],
    headline: `edge bundle ${(deployedGzip / 1024).toFixed(1)} KiB gzipped; one-file server ${(server.bytes / 1e6).toFixed(2)} MB, serving in ${start.toFixed(0)} ms`,
  };
}

/** Milliseconds from starting the one-file server until it answers a gene record with 200. */
function firstAnswerMs(file: string, tree: string, keysDir: string): Promise<number> {
  const started = performance.now();
  const child = spawn(process.execPath, [file, 'serve', '--dir', tree, '--port', '0', '--keys-dir', keysDir], {
    stdio: ['ignore', 'pipe', 'ignore'],
  });
  return new Promise((resolve, reject) => {
    let out = '';
    let asked = false;
    child.stdout!.setEncoding('utf8').on('data', async (d: string) => {
      out += d;
      const m = /isoatlas serving .* at (http:\/\/[^\s/]+)\/api\/v1\//.exec(out);
      if (!m || asked) return;
      asked = true;
      try {
        const r = await fetch(`${m[1]}/api/v1/genes/PRR5`);
        await r.arrayBuffer();
        if (r.status !== 200) throw new Error(`the one-file server answered ${r.status}`);
        resolve(performance.now() - started);
      } catch (err) {
        reject(err);
      } finally {
        child.kill('SIGTERM');
      }
    });
    child.once('exit', (code) => reject(new Error(`the one-file server exited ${code} before answering`)));
  });
}
