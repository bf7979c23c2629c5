// `serve` and `mirror`: what a mirror operator runs. Shared by the full CLI and the one-file server
// CLI (server-cli.ts, bundled without native modules), so both take the same options.
import type { Command } from 'commander';
import { UsageError } from './errors.js';
import { readAccessConfigFile } from './access-config-file.js';
import { DEFAULT_PORT, log, parseBaseUrl, parseMode, parsePort, positiveInteger } from './cli-options.js';
import { parseEndpoint } from './storage-errors.js';

/** `defaultDir`: what `serve` serves without --dir (the demo tree in a checkout; none in the bundle). */
export function addServeCommands(cli: Command, defaults: { defaultDir?: string; keysDir: string }): void {
  cli
    .command('serve')
    .description('Serve a rendered tree, or a mirror (a store of releases), over HTTP with the edge function.')
    .option('--dir <dir>', 'rendered tree or mirror to serve', defaults.defaultDir)
    .option('--port <n>', 'port (0 picks a free one); default $PORT or 8080', parsePort, parsePort(DEFAULT_PORT))
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option('--structure-base <url>', 'base URL that structure redirects point into (default: a root-relative path into this server, which serves /structures/ itself)', parseBaseUrl)
    .option('--access <mode>', 'open (keys optional) or key-required', parseMode, 'open')
    .option('--access-config <file>', 'tiers and limits (JSON; see `isoatlas keys tiers` and the README)')
    .option('--keys-dir <dir>', 'key registry and server secret (see `isoatlas keys`)', defaults.keysDir)
    .option('--metrics', 'answer GET /metrics in Prometheus text format (requests by route and status, latency, cache hits)', false)
    .action(async (o: { dir?: string; port: number; host: string; structureBase?: string; access: 'open' | 'key-required'; accessConfig?: string; keysDir: string; metrics: boolean }) => {
      const access = readAccessConfigFile(o.accessConfig, o.access);
      if (!o.dir) throw new UsageError('--dir is required: the rendered tree or mirror to serve');
      const { serve } = await import('./serve.js');
      await serve({ dir: o.dir, port: o.port, host: o.host, structureBaseUrl: o.structureBase, access, keysDir: o.keysDir, metrics: o.metrics });
    });

  cli
    .command('mirror')
    .description(
      'Copy releases of a published atlas (the current one, those asked for, and those already held, up to --keep) into a local store that `isoatlas serve --dir` serves and other mirrors can sync from: every object once, verified, resumable; the mirror switches release in one write.',
    )
    .requiredOption('--from <source>', 'a published store (the CDN, a running `isoatlas serve` of a mirror, or any base URL with current.json), a tree root with manifest.json, or s3://bucket[/prefix]')
    .requiredOption('--to <dir>', 'mirror directory (a store: objects/, releases.json, current.json, mirror.json)')
    .option('--release <name>', 'also hold this release (repeatable); it must be kept by the source', (v: string, prev: string[]) => [...prev, v], [] as string[])
    .option('--keep <n>', 'releases to hold, the current one included', positiveInteger, 2)
    .option('--concurrency <n>', 'downloads in flight at once', positiveInteger, 16)
    .option('--region <region>', 'S3 region (default $AWS_REGION or us-east-1)')
    .option('--endpoint <url>', 'S3-compatible endpoint (path-style addressing), e.g. http://127.0.0.1:9000', parseEndpoint)
    .action(async (o: { from: string; to: string; release: string[]; keep: number; concurrency: number; region?: string; endpoint?: string }) => {
      const { mirror } = await import('./mirror.js');
      await mirror({ ...o, releases: o.release, log });
    });

}
