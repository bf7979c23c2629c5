// CDN stacks synthesized in a process of their own, for tests that only read the templates.
//
// Every synth validates its templates (SYNTH_CONTEXT) with CDK's validator, a large WebAssembly
// module whose engine is built once per process. In a process that synthesizes a few stacks and
// exits, V8's optimizing compilers and helper threads cost far more CPU than they save; baseline
// compilation on the main thread does the same work for a fraction. A test worker that needs nothing
// else from CDK then does not load it at all.
import { execFile } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { AccessMode } from '../../edge/access/config.js';

const REPO = fileURLToPath(new URL('../..', import.meta.url));
const SELF = fileURLToPath(import.meta.url);

/** Node flags for a process that runs a synth or two and exits (`npm run synth` in the tests too). */
export const SYNTH_NODE_FLAGS = ['--liftoff-only', '--single-threaded'];

interface SynthRequest {
  /** Where the edge and meter bundles and the cloud assembly go. */
  outDir: string;
  bucketName: string;
  /** A stack per entry: its id and its access mode. */
  stacks: Record<string, AccessMode>;
}

/** The templates of the stacks asked for, by stack id: edge and meter bundled for this bucket, every
 * stack in one app synthesized with SYNTH_CONTEXT (a finding fails it), in a child process. */
export async function synthesizeCdnTemplates(request: SynthRequest): Promise<Map<string, any>> {
  await new Promise<void>((resolve, reject) =>
    execFile(
      join(REPO, 'node_modules/.bin/tsx'),
      [...SYNTH_NODE_FLAGS, SELF, JSON.stringify(request)],
      { cwd: REPO, timeout: 240_000 },
      (err, _stdout, stderr) => (err ? reject(new Error(`CDN synth failed: ${err.message}\n${stderr}`)) : resolve()),
    ),
  );
  const assembly = join(request.outDir, 'cdk.out');
  return new Map(
    Object.keys(request.stacks).map((id) => [
      id,
      JSON.parse(readFileSync(join(assembly, `${id}.template.json`), 'utf8')),
    ]),
  );
}

async function main(request: SynthRequest): Promise<void> {
  // Loaded here only: the importing test worker stays clear of CDK.
  const { App } = await import('../../infra/cdk.js');
  const { bundleEdge, bundleMeter } = await import('../../build/bundle/edge.js');
  const { IsoatlasCdnStack, SYNTH_CONTEXT, edgeBundleConfig } = await import('../../infra/stack.js');
  const edge = join(request.outDir, 'edge');
  const meter = join(request.outDir, 'meter');
  await bundleEdge({ outDir: edge, ...edgeBundleConfig({ bucketName: request.bucketName }) });
  await bundleMeter({ outDir: meter });
  const app = new App({ outdir: join(request.outDir, 'cdk.out'), context: SYNTH_CONTEXT });
  for (const [id, mode] of Object.entries(request.stacks)) {
    new IsoatlasCdnStack(app, id, {
      bucketName: request.bucketName,
      edgeCodeDir: edge,
      access: { mode, meterCodeDir: meter },
    });
  }
  app.synth();
}

if (process.argv[1] === SELF) await main(JSON.parse(process.argv[2]!) as SynthRequest);
