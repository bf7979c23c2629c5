// Clients that hold a server's connections, for the tests of its timeouts and of one address's share
// (test/nginx-timeouts.test.ts, test/nginx-firewall.test.ts): raw TCP connections from one local
// address (127.x and any address given to a namespace's loopback are this machine), each sending a
// request's head a byte at a time and never finishing it, or asking and never reading the answer.
// What became of each connection is recorded as it happens, and waited for on those events.
import net from 'node:net';

export interface HeldConnection {
  /** performance.now() when it was opened, connected (or refused), and closed by either side. */
  openedAt: number;
  connectedAt?: number;
  refused?: boolean;
  closedAt?: number;
  /** What the peer sent, and when its last bytes came. */
  received: Buffer;
  receivedAt?: number;
}

export interface HeldConnections {
  /** Every connection opened, in order: the first wave, then those opened again in their place. */
  connections: HeldConnection[];
  /** Of all connections: connected, refused (reset or refused before connecting), closed after
   * connecting, and open now. */
  counts: () => { connected: number; refused: number; closed: number; open: number };
  /** Resolves once each connection of the first wave has connected or been refused. */
  settled: Promise<void>;
  /** Resolves once each connection of the first wave has closed or been refused. */
  ended: Promise<void>;
  /** Resolves once `n` connections in all have been closed after connecting. */
  untilClosed: (n: number) => Promise<void>;
  /** Closes those still open and opens no more. */
  stop: () => void;
}

interface Target {
  host: string;
  port: number;
  /** The local address the connections come from. */
  from: string;
}

/** `count` connections that each send the start of a request to `path`, then one more byte of a
 * header that never ends every `dripMs` (a slow client the headers' timeout must cut off). With
 * `reopen`, a connection closed or refused is opened again at the next drip, so that the address
 * keeps trying to hold `count` (as an attacker would). */
export function slowHeaders(
  to: Target & { count: number; dripMs: number; path?: string; reopen?: boolean },
): HeldConnections {
  const head = `GET ${to.path ?? '/api/v1/release'} HTTP/1.1\r\nHost: front\r\nX-Slow: `;
  const held = hold(to, to.count, (socket) => socket.write(head));
  const drip = setInterval(() => {
    for (let slot = 0; slot < to.count; slot++) {
      const socket = held.slots[slot];
      if (socket.destroyed) {
        if (to.reopen) held.open(slot);
      } else if (!socket.connecting) socket.write('z');
    }
  }, to.dripMs);
  if (!to.reopen) void held.ended.then(() => clearInterval(drip));
  return {
    ...held,
    stop: () => {
      clearInterval(drip);
      held.stop();
    },
  };
}

/** One connection that sends `requests` (whole heads) at once, pipelined, and reads the answers. Or,
 * with `neverReadingDripMs`, never reads them, so that the server's writes stall once the sockets'
 * buffers are full; it writes a byte every so often instead, the start of one more request, which is
 * how a client that reads nothing learns that the server has reset the connection. */
export function pipelined(to: Target & { requests: string[]; neverReadingDripMs?: number }): HeldConnections {
  return hold(to, 1, (socket) => {
    socket.write(to.requests.join(''));
    if (to.neverReadingDripMs === undefined) return;
    socket.pause();
    const drip = setInterval(() => socket.write('G'), to.neverReadingDripMs);
    socket.once('close', () => clearInterval(drip));
  });
}

function hold(to: Target, count: number, start: (socket: net.Socket) => void) {
  const connections: HeldConnection[] = [];
  const slots: net.Socket[] = [];
  let stopped = false;
  // The first wave's connections not yet connected (or refused), and not yet closed (or refused).
  let connecting = count;
  let unclosed = count;
  let settle!: () => void;
  let end!: () => void;
  const settled = new Promise<void>((ok) => (settle = ok));
  const ended = new Promise<void>((ok) => (end = ok));
  let closed = 0;
  const closedWaiters: { n: number; ok: () => void }[] = [];
  const untilClosed = (n: number) => new Promise<void>((ok) => (closed >= n ? ok() : closedWaiters.push({ n, ok })));
  if (count === 0) settle(), end();

  const open = (slot: number) => {
    if (stopped) return;
    const firstWave = slots[slot] === undefined;
    const record: HeldConnection = { openedAt: performance.now(), received: Buffer.alloc(0) };
    const socket = net.connect({ host: to.host, port: to.port, localAddress: to.from });
    connections.push(record);
    slots[slot] = socket;
    const connectedOrRefused = () => {
      if (firstWave && --connecting === 0) settle();
    };
    socket.once('connect', () => {
      record.connectedAt = performance.now();
      connectedOrRefused();
      start(socket);
    });
    socket.on('data', (chunk: Buffer) => {
      record.received = Buffer.concat([record.received, chunk]);
      record.receivedAt = performance.now();
    });
    // A reset is one way of being closed; the record says which came first.
    socket.on('error', () => {});
    socket.once('close', () => {
      if (record.connectedAt === undefined) {
        record.refused = true;
        connectedOrRefused();
      } else {
        record.closedAt = performance.now();
        closed++;
        for (const waiter of closedWaiters.filter((w) => w.n <= closed)) {
          closedWaiters.splice(closedWaiters.indexOf(waiter), 1);
          waiter.ok();
        }
      }
      if (firstWave && --unclosed === 0) end();
    });
  };
  for (let slot = 0; slot < count; slot++) open(slot);

  return {
    connections,
    slots,
    open,
    settled,
    ended,
    untilClosed,
    counts: () => {
      const connected = connections.filter((c) => c.connectedAt !== undefined).length;
      const closed = connections.filter((c) => c.closedAt !== undefined).length;
      return { connected, refused: connections.filter((c) => c.refused).length, closed, open: connected - closed };
    },
    stop: () => {
      stopped = true;
      for (const socket of slots) socket.destroy();
    },
  };
}
