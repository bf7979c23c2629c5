// A plain HTTP server on a free loopback port, for the fake sources the mirror's tests sync from:
// a subclass answers each request; start() listens, stop() closes and drops open connections.
import http from 'node:http';
import type { AddressInfo } from 'node:net';

export abstract class LocalHttpServer {
  /** http://127.0.0.1:<port>, once started. */
  base = '';
  private readonly server = http.createServer((req, res) => void this.answer(req, res));

  protected abstract answer(req: http.IncomingMessage, res: http.ServerResponse): Promise<unknown>;

  async start(): Promise<void> {
    await new Promise<void>((ok) => this.server.listen(0, '127.0.0.1', ok));
    this.base = `http://127.0.0.1:${(this.server.address() as AddressInfo).port}`;
  }

  async stop(): Promise<void> {
    // Stop accepting first, then drop what is open: the other order leaves a window in which a
    // client's new connection keeps close() waiting.
    const closed = new Promise((ok) => this.server.close(ok));
    this.server.closeAllConnections();
    await closed;
  }
}
