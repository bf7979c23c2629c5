// The ceilings for any Node server on this machine: one file's bytes held in memory, answered to
// every request with no routing, no Web Request/Response and no file reads. `http`: on node:http;
// `net`: on node:net, each request found by its blank line and answered with the same bytes (what
// node-net.ts does at the least). Started by bench/server-vs-nginx.ts:
// `node bare-node-server.mjs <file> <port> [http|net]`.
import { createServer } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const [file, port, kind = 'http'] = process.argv.slice(2);
const body = readFileSync(file);
const headers = {
  'Content-Type': 'application/json; charset=utf-8',
  'Content-Length': String(body.length),
  ETag: `"${createHash('sha256').update(body).digest('hex')}"`,
  'Cache-Control': 'public, max-age=3600',
  'Access-Control-Allow-Origin': '*',
};
if (kind === 'net') {
  const head = `HTTP/1.1 200 OK\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}Connection: keep-alive\r\n\r\n`;
  const answer = Buffer.concat([Buffer.from(head, 'latin1'), body]);
  createNetServer({ noDelay: true }, (socket) => {
    let carry = '';
    socket.on('data', (chunk) => {
      // Requests end with a blank line; a GET has no body. What is left waits for the next read.
      const text = carry + chunk.toString('latin1');
      let at = 0;
      for (let end = text.indexOf('\r\n\r\n'); end !== -1; end = text.indexOf('\r\n\r\n', at)) {
        socket.write(answer);
        at = end + 4;
      }
      carry = text.slice(at);
    });
    socket.on('error', () => socket.destroy());
  }).listen(Number(port), '127.0.0.1');
} else {
  createServer((req, res) => {
    req.resume();
    res.writeHead(200, headers);
    res.end(body);
  }).listen(Number(port), '127.0.0.1');
}
