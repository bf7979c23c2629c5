// What an answer holds while its client takes it (edge/adapters/send-body.ts, unsent-budget.ts) and
// how a mirror's packs are streamed from its objects (edge/origins/store-packs.ts): a pack is read a
// batch at a time as the reader takes it, and no more once the reader cancels; a client that stops
// reading is cut after the send timeout; one that goes away cancels the body; every answer, the
// first on a connection too, is charged to the budget, which cuts the most stalled holder to make room.
import { afterEach, describe, expect, it } from 'vitest';
import http from 'node:http';
import net from 'node:net';
import { createHash } from 'node:crypto';
import { createNodeServer } from '../edge/adapters/node-http.js';
import { UnsentBudget, type ConnectionCharge } from '../edge/adapters/unsent-budget.js';
import { bounded } from './helpers/wait.js';
import { askedRange } from '../edge/endpoints/pack-file.js';
import { StorePacks } from '../edge/origins/store-packs.js';
import type { Origin } from '../edge/origin.js';
import type { PackIndex } from '../edge/contract/packs.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { closeNow } from './helpers/ports.js';

const sha = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

/** A store of `count` objects of `size` bytes each, as one pack, counting the objects read. */
function packStore(count: number, size: number) {
  const files = new Map<string, Uint8Array>();
  const objects: PackIndex['objects'] = [];
  const bodies: Uint8Array[] = [];
  for (let i = 0; i < count; i++) {
    const body = new Uint8Array(size).fill(i % 251);
    body[0] = i & 255;
    body[1] = i >> 8;
    files.set(objectKey(sha(body)), body);
    objects.push([sha(body), i * size, size]);
    bodies.push(body);
  }
  const whole = Buffer.concat(bodies);
  const index: PackIndex = { format: 1, pack: { sha256: sha(whole), size: whole.length }, objects };
  const reads: string[] = [];
  const origin: Origin = {
    description: 'memory',
    async read(path) {
      reads.push(path);
      const body = files.get(path);
      return body ? { body } : null;
    },
    async size(path) {
      return files.get(path)?.length ?? null;
    },
  };
  return { origin, index, whole, reads, files };
}

describe('a pack streamed from its objects', () => {
  it('reads one batch before the answer begins and the next only as the reader asks; nothing once it cancels', async () => {
    const { origin, index, whole, reads } = packStore(200, 1024);
    const stream = await new StorePacks(origin).stream(index, 0, whole.length - 1);
    const first = reads.length;
    expect(first).toBeGreaterThan(0);
    expect(first).toBeLessThan(200);
    const reader = stream.getReader();
    const chunk = (await reader.read()).value!;
    expect(Buffer.from(chunk).equals(whole.subarray(0, chunk.length))).toBe(true);
    // Taking the first batch read nothing more: the next is read when asked for.
    expect(reads.length).toBe(first);
    await reader.read();
    const asked = reads.length;
    expect(asked).toBeGreaterThan(first);
    await reader.cancel();
    await new Promise((r) => setTimeout(r, 20));
    expect(reads.length).toBe(asked);
  });

  it('gives exactly the bytes of a range that starts and ends inside objects', async () => {
    const { origin, index, whole } = packStore(50, 1000);
    const stream = await new StorePacks(origin).stream(index, 1234, 40_321);
    const got = Buffer.from(await new Response(stream).arrayBuffer());
    expect(got.equals(whole.subarray(1234, 40_322))).toBe(true);
  });

  it('knows before an answer begins which object of a range it does not hold, by size', async () => {
    const { origin, index, files } = packStore(20, 100);
    files.delete(objectKey(index.objects[7][0]));
    files.set(objectKey(index.objects[9][0]), new Uint8Array(99));
    const packs = new StorePacks(origin);
    expect(await packs.missing(index, 0, 699)).toBeNull();
    expect((await packs.missing(index, 650, 750))?.sha256).toBe(index.objects[7][0]);
    expect((await packs.missing(index, 800, 1999))?.sha256).toBe(index.objects[9][0]);
  });

  it('asks Range the way RFC 9110 reads it: at or past the end is unsatisfiable', () => {
    expect(askedRange('bytes=100-', 100)).toBe('unsatisfiable');
    expect(askedRange('bytes=100-200', 100)).toBe('unsatisfiable');
    expect(askedRange('bytes=99-', 100)).toEqual([99, 99]);
    expect(askedRange('bytes=0-', 100)).toEqual([0, 99]);
    expect(askedRange('bytes=-10', 100)).toEqual([90, 99]);
    expect(askedRange('bytes=5-4', 100)).toBe('whole');
    expect(askedRange('bytes=0-1,5-6', 100)).toBe('whole');
  });
});

describe('the unsent budget', () => {
  const conn = (): ConnectionCharge => ({ unsent: 0, progressAt: 0, cut: () => {} });

  it("charges a connection's first answer whatever its size, and refuses more only past its share", () => {
    const budget = new UnsentBudget({ maxUnsentBytesPerConnection: 100, maxUnsentBytes: 1_000 });
    const c = conn();
    expect(budget.charge(c, 500)).toBe(true);
    expect(budget.held).toBe(500);
    expect(budget.charge(c, 1)).toBe(false);
    budget.release(c, 500);
    expect([budget.held, c.unsent]).toEqual([0, 0]);
  });

  it('makes room by cutting the connection that has taken nothing for longest, never one that reads', () => {
    let now = 0;
    const budget = new UnsentBudget({ maxUnsentBytesPerConnection: 1_000, maxUnsentBytes: 1_000 }, () => now);
    const cuts: string[] = [];
    const stalled = { ...conn(), cut: () => void cuts.push('stalled') };
    const reading = { ...conn(), cut: () => void cuts.push('reading') };
    expect(budget.charge(stalled, 400)).toBe(true);
    now = 10;
    expect(budget.charge(reading, 400)).toBe(true);
    now = 20;
    budget.release(reading, 100);
    // A first answer that does not fit: the stalled connection goes, its bytes with it.
    expect(budget.charge(conn(), 500)).toBe(true);
    expect(cuts).toEqual(['stalled']);
    expect(budget.held).toBe(800);
  });
});

describe('an answer sent as the client takes it', () => {
  let server: http.Server | undefined;
  afterEach(() => closeNow(server));

  /** A server whose one answer is an endless stream of 64 KiB chunks; says when its body is cancelled. */
  async function endless(limits: { sendTimeoutMs: number }) {
    const events: string[] = [];
    let cancelled!: () => void;
    const cancel = new Promise<void>((ok) => (cancelled = ok));
    let timedOut!: () => void;
    const sendTimeout = new Promise<void>((ok) => (timedOut = ok));
    server = createNodeServer(
      async () =>
        new Response(
          new ReadableStream<Uint8Array>(
            {
              pull: (c) => c.enqueue(new Uint8Array(64 * 1024)),
              cancel: () => {
                events.push('cancelled');
                cancelled();
              },
            },
            { highWaterMark: 0 },
          ),
        ),
      {
        limits,
        log: { info: () => {}, error: () => {}, warn: (f) => void (f.reason === 'send timeout' && timedOut()) },
      },
    );
    await new Promise<void>((ok) => server!.listen(0, '127.0.0.1', ok));
    return { port: (server.address() as { port: number }).port, events, cancel, sendTimeout };
  }

  it('cuts a client that stops reading once the send timeout passes with nothing taken, and stops the body', async () => {
    const { port, cancel, sendTimeout } = await endless({ sendTimeoutMs: 300 });
    const socket = net.connect({ host: '127.0.0.1', port });
    socket.on('error', () => {});
    socket.pause();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await bounded(Promise.all([sendTimeout, cancel]), 'the cut and the body cancelled');
    socket.destroy();
  });

  it('stops reading the body when the client goes away mid-answer', async () => {
    const { port, cancel, events } = await endless({ sendTimeoutMs: 60_000 });
    await new Promise<void>((done) => {
      const req = http.get({ host: '127.0.0.1', port, path: '/' }, (res) => {
        res.once('data', () => {
          req.destroy();
          done();
        });
      });
      req.on('error', () => {});
    });
    await bounded(cancel, 'the body cancelled');
    expect(events).toEqual(['cancelled']);
  });
});
