// `isoatlas serve`: the edge function over a local tree on Node's http server — the local server
// behind `npm start` and the server an offline mirror runs.
import { existsSync } from 'node:fs';
import { join, resolve } from 'node:path';
import type { AddressInfo } from 'node:net';
import { treePaths } from '../edge/contract/tree.js';
import { createHandler } from '../edge/handler.js';
import { LocalOrigin } from '../edge/origins/local.js';
import { createNodeServer, shutdownGracefully } from '../edge/adapters/node-http.js';

export interface ServeOptions {
  dir: string;
  port: number;
  host: string;
  structureBaseUrl?: string;
  log?: (line: string) => void;
}

export class NotATreeError extends Error {}

/** Serves until SIGTERM/SIGINT; resolves once in-flight requests have finished and the server closed. */
export async function serve(opts: ServeOptions): Promise<void> {
  const dir = resolve(opts.dir);
  for (const path of [treePaths.manifest, treePaths.release]) {
    if (!existsSync(join(dir, path))) {
      throw new NotATreeError(`${dir} is not a rendered isoatlas tree (no ${path}); build one with \`isoatlas build\` or \`npm start\``);
    }
  }
  const log = opts.log ?? ((line: string) => process.stdout.write(`${line}\n`));
  const handler = createHandler({ origin: new LocalOrigin(dir), structureBaseUrl: opts.structureBaseUrl, serveStructureFiles: true });
  const server = createNodeServer(handler, { log });
  await new Promise<void>((ok, fail) => {
    server.once('error', fail);
    server.listen(opts.port, opts.host, () => ok());
  });
  const { port } = server.address() as AddressInfo;
  const host = opts.host.includes(':') ? `[${opts.host}]` : opts.host;
  log(`isoatlas serving ${dir} at http://${host}:${port}/api/v1/ (Ctrl-C to stop)`);

  await new Promise<void>((done) => {
    const stop = (signal: string) => {
      log(`${signal}: finishing in-flight requests, then stopping`);
      shutdownGracefully(server).then(done);
    };
    process.once('SIGTERM', () => stop('SIGTERM'));
    process.once('SIGINT', () => stop('SIGINT'));
  });
  log('stopped');
}
