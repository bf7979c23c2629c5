// Local TCP ports for tests that start servers, or that need one nothing answers on.
import type { Server } from 'node:http';
import * as net from 'node:net';

/** A TCP port nothing listens on right now (a server may take it later). */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', reject);
    probe.listen(0, '127.0.0.1', () => {
      const { port } = probe.address() as net.AddressInfo;
      probe.close(() => resolve(port));
    });
  });
}

/** Closes an in-process HTTP server now, its open connections with it (kept-alive or held by clients
 * that never read), so that the test file's worker can end. */
export function closeNow(server: Server | undefined): Promise<void> {
  return new Promise((done) => {
    if (!server) return done();
    server.close(() => done());
    server.closeAllConnections();
  });
}
