// The ceiling for any Node server on this machine: node:http answering every request with one file's
// bytes held in memory (no routing, no Web Request/Response, no file reads). Started by
// bench/server-vs-nginx.ts: `node bare-node-server.mjs <file> <port>`.
import { createServer } from 'node:http';
import { createHash } from 'node:crypto';
import { readFileSync } from 'node:fs';

const [file, port] = process.argv.slice(2);
const body = readFileSync(file);
const headers = {
  'Content-Type': 'application/json; charset=utf-8',
  'Content-Length': String(body.length),
  ETag: `"${createHash('sha256').update(body).digest('hex')}"`,
  'Cache-Control': 'public, max-age=3600',
  'Access-Control-Allow-Origin': '*',
};
createServer((req, res) => {
  req.resume();
  res.writeHead(200, headers);
  res.end(body);
}).listen(Number(port), '127.0.0.1');
