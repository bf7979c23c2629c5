// Clients that send requests without reading the answers: what they make `isoatlas serve` hold is
// bounded (SERVER_LIMITS: answers waiting per connection and in total), and the server keeps
// answering other clients meanwhile. The real CLI server with its default limits, in its own
// process, so its resident memory is its own.
import { afterEach, describe, expect, inject, it } from 'vitest';
import net from 'node:net';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { startServer, type RunningServer } from './helpers/server.js';
import { SERVER_LIMITS } from '../edge/adapters/server-limits.js';

/** The bound this test holds the server to while 300 clients flood it: four times its budget of
 * unsent bytes (SERVER_LIMITS.maxUnsentBytes), room for the parsed requests and for a garbage
 * collector that runs late on a busy machine; far below what the flood's answers add up to when
 * nothing bounds them. */
const RSS_BOUND_BYTES = 4 * SERVER_LIMITS.maxUnsentBytes;
const CLIENTS = 300;
/** The largest file the demo serves (a structure's mmCIF): answers pile up fastest. */
const TARGET = '/structures/PB.8671.2.cif';

function rssBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB/m.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) * 1024 : 0;
}

const sleep = (ms: number) => new Promise((ok) => setTimeout(ok, ms));

/** The flood comes from this many addresses (127.0.0.x are all this machine), each within its share
 * of connections (SERVER_LIMITS.maxConnectionsPerAddress): the bound on what they hold is what is tested. */
const ADDRESSES = Math.ceil(CLIENTS / SERVER_LIMITS.maxConnectionsPerAddress) + 1;

/** `isoatlas serve` with a per-IP quota the flood cannot spend. */
function startUnthrottled(): Promise<RunningServer> {
  const dir = mkdtempSync(join(tmpdir(), 'isoatlas-memory-'));
  const config = join(dir, 'access.json');
  writeFileSync(config, JSON.stringify({ open: { anonymous_per_ip: { per_minute: 1_000_000_000 } } }));
  return startServer({
    dir: inject('fixtureTree'),
    extraArgs: ['--access-config', config, '--keys-dir', join(dir, 'keys')],
  });
}

let server: RunningServer | undefined;
afterEach(async () => {
  await server?.stop();
  server = undefined;
});

/** Opens CLIENTS connections that each send `depth` pipelined requests, `rounds` times, and never
 * read; while they do, a well-behaved client asks for a gene. Resolves with the server's peak RSS
 * and that client's answer. */
async function flood(api: string, port: number, pid: number, depth: number, rounds: number) {
  let peak = rssBytes(pid);
  console.log(`server RSS before the flood: ${(peak / 2 ** 20).toFixed(0)} MiB`);
  const sampler = setInterval(() => (peak = Math.max(peak, rssBytes(pid))), 25);
  const sockets: net.Socket[] = [];
  try {
    for (let i = 0; i < CLIENTS; i++) {
      const socket = net.connect({ port, host: '127.0.0.1', localAddress: `127.0.0.${10 + (i % ADDRESSES)}` });
      socket.on('error', () => {}); // being cut off is the expected end
      socket.pause(); // never read: what the server sends stays in the kernel's buffers and its own
      sockets.push(socket);
    }
    const batch = `GET ${TARGET} HTTP/1.1\r\nHost: atlas.test\r\n\r\n`.repeat(depth);
    for (let r = 0; r < rounds; r++) {
      for (const s of sockets) if (!s.destroyed) s.write(batch);
      await sleep(100);
    }
    // A new client is answered while the flood's connections are open (in time the flood's own work
    // bounds: on a loaded machine that is a minute or more).
    const answer = await fetch(`${api}/genes/PRR5`, { signal: AbortSignal.timeout(180_000) });
    const body = (await answer.json()) as { symbol: string };
    await sleep(500);
    console.log(`${CLIENTS} clients × ${depth} pipelined × ${rounds}: peak RSS ${(peak / 2 ** 20).toFixed(0)} MiB`);
    return { peak, status: answer.status, symbol: body.symbol };
  } finally {
    clearInterval(sampler);
    for (const s of sockets) s.destroy();
  }
}

/** Floods a fresh server and checks the bound held and the well-behaved client was served. */
async function floodHolds(depth: number, rounds: number): Promise<RunningServer> {
  server = await startUnthrottled();
  const result = await flood(server.api, Number(new URL(server.base).port), server.child.pid!, depth, rounds);
  expect(result.status).toBe(200);
  expect(result.symbol).toBe('PRR5');
  expect(result.peak).toBeLessThan(RSS_BOUND_BYTES);
  return server;
}

describe('clients that pipeline without reading', () => {
  it(`${CLIENTS} clients each far ahead of their answers: cut off, memory bounded, others served`, async () => {
    const running = await floodHolds(100, 3);
    await running.untilLogged(
      (logs) => /closed: \d+ requests waiting for a client that does not read/.test(logs),
      'the line of a client cut off',
    );
  });

  it(`${CLIENTS} clients each within the per-connection bounds: the total budget holds, others served`, async () => {
    await floodHolds(30, 4);
  });
});
