// One HTTP/1.1 request on its own connection, as a front's tests need it: from a chosen local address
// (127.0.0.x are all this machine, so nginx and the server see distinct clients), any method and
// headers, the body kept as bytes (a front's answer is compared byte for byte with the server's).
import http from 'node:http';
import net from 'node:net';

export interface RawReply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: Buffer;
  /** The body as UTF-8 text. */
  text: string;
}

/** The text decoded when first read: most callers read only the bytes, some of them large. */
function reply(status: number, headers: http.IncomingHttpHeaders, body: Buffer): RawReply {
  let text: string | undefined;
  return {
    status,
    headers,
    body,
    get text() {
      text ??= body.toString('utf8');
      return text;
    },
  };
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
          resolve(reply(res.statusCode!, res.headers, Buffer.concat(chunks)));
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

/** Sends `head` byte for byte on a connection of its own (so that the test chooses every header, its
 * order and its spelling) and reads the answer until the server closes the connection: the head
 * should say `Connection: close`. */
export function rawExchange(base: string, head: string): Promise<RawReply> {
  const { hostname, port } = new URL(base);
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    const socket = net.connect(Number(port), hostname, () => socket.write(Buffer.from(head, 'latin1')));
    socket.on('data', (c: Buffer) => chunks.push(c));
    socket.on('error', reject);
    socket.on('close', () => {
      const raw = Buffer.concat(chunks);
      const end = raw.indexOf('\r\n\r\n');
      if (end < 0) return reject(new Error(`no answer head in ${raw.length} bytes`));
      const [statusLine, ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n');
      const headers: http.IncomingHttpHeaders = {};
      for (const line of lines)
        headers[line.slice(0, line.indexOf(':')).toLowerCase()] = line.slice(line.indexOf(':') + 1).trim();
      const body = raw.subarray(end + 4, end + 4 + Number(headers['content-length'] ?? raw.length));
      resolve(reply(Number(statusLine.split(' ')[1]), headers, body));
    });
  });
}
