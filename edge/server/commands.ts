// `serve`, `mirror` and `nginx-config`: what a mirror operator runs. Shared by the full CLI and the one-file server
// CLI (server-cli.ts, bundled without native modules), so both take the same options.
import { InvalidArgumentError, type Command } from 'commander';
import { UsageError } from '../../build/common/errors.js';
import { readAccessConfigFile } from '../../build/common/access-config-file.js';
import {
  DEFAULT_PORT,
  collectAddress,
  nonNegativeNumber,
  parseBaseUrl,
  parseMode,
  parsePort,
  positiveInteger,
} from '../../build/common/cli-options.js';
import { infoLine, log } from './logger.js';
import { DEFAULT_GRACE_HOURS, SAFE_GRACE_HOURS } from '../../build/publish/grace.js';
import { parseEndpoint } from '../../build/common/storage-errors.js';

/** A value written into the nginx config as it is: only the characters its kind needs. */
function nginxValue(option: string, pattern: RegExp, what: string) {
  return (value: string) => {
    if (!pattern.test(value)) throw new InvalidArgumentError(`expected ${what} for ${option}, not "${value}"`);
    return value;
  };
}

/** `defaultDir`: what `serve` serves without --dir (the demo tree in a checkout; none in the bundle). */
export function addServeCommands(cli: Command, defaults: { defaultDir?: string; keysDir: string }): void {
  cli
    .command('serve')
    .description('Serve a rendered tree, or a mirror (a store of releases), over HTTP with the edge function.')
    .option('--dir <dir>', 'rendered tree or mirror to serve', defaults.defaultDir)
    .option('--port <n>', 'port (0 picks a free one); default $PORT or 8080', parsePort, parsePort(DEFAULT_PORT))
    .option('--host <address>', 'address to listen on', '127.0.0.1')
    .option(
      '--structure-base <url>',
      'base URL that structure redirects point into (default: a root-relative path into this server, which serves /structures/ itself)',
      parseBaseUrl,
    )
    .option('--access <mode>', 'open (keys optional) or key-required', parseMode, 'open')
    .option('--access-config <file>', 'tiers and limits (JSON; see `isoatlas keys tiers` and the README)')
    .option('--keys-dir <dir>', 'key registry and server secret (see `isoatlas keys`)', defaults.keysDir)
    .option(
      '--metrics',
      'answer GET /metrics in Prometheus text format (requests by route and status, latency, cache hits)',
      false,
    )
    .option(
      '--trust-proxy <address>',
      'a front (such as the nginx front of `isoatlas nginx-config`) connecting from this address names the client in X-Forwarded-For; repeatable',
      collectAddress,
      [] as string[],
    )
    .action(
      async (o: {
        dir?: string;
        port: number;
        host: string;
        structureBase?: string;
        access: 'open' | 'key-required';
        accessConfig?: string;
        keysDir: string;
        metrics: boolean;
        trustProxy: string[];
      }) => {
        const access = readAccessConfigFile(o.accessConfig, o.access);
        if (!o.dir) throw new UsageError('--dir is required: the rendered tree or mirror to serve');
        const { serve } = await import('./serve.js');
        await serve({
          dir: o.dir,
          port: o.port,
          host: o.host,
          structureBaseUrl: o.structureBase,
          access,
          keysDir: o.keysDir,
          metrics: o.metrics,
          trustProxy: o.trustProxy,
        });
      },
    );

  cli
    .command('mirror')
    .description(
      'Copy releases of a published atlas (the current one, those asked for, and those already held, up to --keep) into a local store that `isoatlas serve --dir` serves and other mirrors can sync from: every object once, verified, resumable; the mirror switches release in one write.',
    )
    .requiredOption(
      '--from <source>',
      'a published store (the CDN, a running `isoatlas serve` of a mirror, or any base URL with current.json), a tree root with manifest.json, or s3://bucket[/prefix]',
    )
    .requiredOption('--to <dir>', 'mirror directory (a store: objects/, releases.json, current.json, mirror.json)')
    .option(
      '--release <name>',
      'also hold this release (repeatable); it must be kept by the source',
      (v: string, prev: string[]) => [...prev, v],
      [] as string[],
    )
    .option('--keep <n>', 'releases to hold, the current one included', positiveInteger, 2)
    .option('--concurrency <n>', 'downloads in flight at once', positiveInteger, 16)
    .option('--region <region>', 'S3 region (default $AWS_REGION or us-east-1)')
    .option(
      '--endpoint <url>',
      'S3-compatible endpoint (path-style addressing), e.g. http://127.0.0.1:9000',
      parseEndpoint,
    )
    .option(
      '--grace-hours <h>',
      `keep the objects of a release the mirror no longer holds this long, for clients still reading it, then delete them, as gc does (below ${SAFE_GRACE_HOURS} only with --force)`,
      nonNegativeNumber,
      DEFAULT_GRACE_HOURS,
    )
    .option('--force', `accept a --grace-hours below ${SAFE_GRACE_HOURS}`)
    .option(
      '--verify',
      'hash every object the mirror holds, not only those new or changed on disk since they were verified; fetch again what fails',
    )
    .action(
      async (o: {
        from: string;
        to: string;
        release: string[];
        keep: number;
        concurrency: number;
        region?: string;
        endpoint?: string;
        graceHours: number;
        force?: boolean;
        verify?: boolean;
      }) => {
        const { mirror } = await import('../mirror/mirror.js');
        await mirror({ ...o, releases: o.release, log: infoLine });
      },
    );

  cli
    .command('nginx-config')
    .description(
      'Write an nginx front for `isoatlas serve` (docs/OPERATIONS.md): nginx answers requests for resources by canonical id from the files of --dir, after the server has counted and admitted them, and passes every other request to the server. Regenerate it and reload nginx after each sync or rebuild.',
    )
    .option('--dir <dir>', 'the rendered tree or mirror the server serves', defaults.defaultDir)
    .option(
      '--upstream <host:port>',
      'where `isoatlas serve --trust-proxy <nginx address>` listens',
      nginxValue(
        '--upstream',
        /^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9.-]+):\d{1,5}$|^unix:\/[^\s;{}'"]+$/,
        'host:port or unix:/path',
      ),
      '127.0.0.1:8080',
    )
    .option(
      '--listen <address>',
      "nginx's listen value, e.g. 80 or 127.0.0.1:8081",
      nginxValue('--listen', /^[A-Za-z0-9.:[\] _-]+$/, 'a port, an address:port or nginx listen parameters'),
      '80',
    )
    .option(
      '--server-name <names>',
      "nginx's server_name",
      nginxValue('--server-name', /^[A-Za-z0-9.*_ -]+$/, 'host names separated by spaces'),
      '_',
    )
    .option(
      '--access-log <file>',
      'file for the log lines of the answers nginx gives itself (the server logs the others)',
      '/var/log/nginx/isoatlas.log',
    )
    .option(
      '--compressed-dir <dir>',
      "where the files' br and gzip copies nginx sends are written and kept (default: <dir>.compressed)",
    )
    .option(
      '--cache-dir <dir>',
      'where nginx keeps the admissions and 404s it answers again without the server (nginx creates it; default /var/lib/nginx/isoatlas-cache)',
    )
    .option('--access <mode>', "the server's arrangement, as given to `isoatlas serve`", parseMode, 'open')
    .option('--access-config <file>', "the server's tiers and limits, as given to `isoatlas serve`")
    .option(
      '--out <file>',
      'write the config here (replaced atomically, only if an earlier run wrote it); default: standard output',
    )
    .action(
      async (o: {
        dir?: string;
        upstream: string;
        listen: string;
        serverName: string;
        accessLog: string;
        compressedDir?: string;
        cacheDir?: string;
        access: 'open' | 'key-required';
        accessConfig?: string;
        out?: string;
      }) => {
        if (!o.dir) throw new UsageError('--dir is required: the rendered tree or mirror `isoatlas serve` serves');
        if (/[\s;{}'"]/.test(o.accessLog))
          throw new UsageError(
            `--access-log must be a path without spaces, quotes, ";" or braces, not "${o.accessLog}"`,
          );
        const { nginxConfig, writeNginxConfig } = await import('./nginx-config.js');
        const config = await nginxConfig({
          dir: o.dir,
          upstream: o.upstream,
          listen: o.listen,
          serverName: o.serverName,
          accessLog: o.accessLog,
          compressedDir: o.compressedDir,
          cacheDir: o.cacheDir,
          access: readAccessConfigFile(o.accessConfig, o.access),
          version: cli.version() ?? 'dev',
        });
        if (o.out) await writeNginxConfig(o.out, config.text);
        else process.stdout.write(config.text);
        log.info(
          `nginx front for release ${config.release}: ${config.files} files nginx may answer from, named by ${o.upstream} at admission, every other request passed to it; compressed copies in ${config.compressed.dir} (${config.compressed.written} written, ${config.compressed.removed} removed)${o.out ? `; written to ${o.out}` : ''} (check and reload: nginx -t && nginx -s reload)`,
        );
      },
    );
}
