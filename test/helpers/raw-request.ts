// One HTTP/1.1 request on its own connection, as a front's tests need it: from a chosen local address
// (127.0.0.x are all this machine, so nginx and the server see distinct clients), any method and
// headers, the body kept as bytes (a front's answer is compared byte for byte with the server's).
import http from 'node:http';

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body as UTF-8 text. */
  text: string;
}

export function rawRequest(
  base: string,
  path: string,
  opts: { from?: string; method?: string; headers?: Record<string, string> } = {},
): Promise<RawReply> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const req = http.request(
      {
        host: hostname,
        port,
        path,
        method: opts.method ?? 'GET',
        headers: { Connection: 'close', ...opts.headers },
        localAddress: opts.from,
        agent: false,
      },
      (res) => {
        const chunks: Buffer[] = [];
        res.on('data', (c: Buffer) => chunks.push(c));
        res.on('end', () => {
          const body = Buffer.concat(chunks);
          resolve({ status: res.statusCode!, headers: res.headers, body, text: body.toString('utf8') });
        });
        // An answer the server cuts short (after its head) is no answer.
        res.on('close', () => {
          if (!res.complete)
            reject(new Error(`${res.statusCode} answer cut short after ${Buffer.concat(chunks).length} bytes`));
        });
      },
    );
    req.on('error', reject);
    req.end();
  });
}
