// Local TCP ports for tests that start servers, or that need one nothing answers on.
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
