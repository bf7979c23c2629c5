// `isoatlas mirror` through packs (edge/mirror/pack-fetch.ts) and `isoatlas serve`'s pack answers
// (edge/endpoints/pack-file.ts): a store with packs (test/helpers/pack-store.ts) mirrored over HTTP from
// a server with default limits, then chained through a server of that mirror (which holds no packs and
// rebuilds them), over S3 from a bucket that holds only the packs, a sync cut off inside a pack and
// resumed, a pack with a flipped byte; and each kind of pack answer.
import { afterAll, beforeAll, describe, expect, inject, it } from 'vitest';
import fg from 'fast-glob';
import type http from 'node:http';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join, normalize } from 'node:path';
import { mirror } from '../edge/mirror/mirror.js';
import { MAX_GAP_BYTES, MAX_RANGE_BYTES, PackedObjects } from '../edge/mirror/pack-fetch.js';
import { SyncScratch } from '../edge/mirror/sync-scratch.js';
import { packKey, type PackIndex } from '../edge/contract/packs.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { S3Backend } from '../edge/store/s3-backend.js';
import { DEFAULT_GRACE_HOURS } from '../build/publish/grace.js';
import { s3Client } from '../build/publish/s3-client.js';
import { writePackedStore, writeSmallTree, type PackedStore } from './helpers/pack-store.js';
import { readManifest } from './helpers/tree.js';
import { writeManifest } from '../build/render/manifest.js';
import { publish } from '../build/publish/publish.js';
import { ReleaseStore } from '../edge/store/release-store.js';
import { DirectoryBackend } from '../edge/store/directory-backend.js';
import { startServer, type RunningServer } from './helpers/server.js';
import { startS3rver } from './helpers/s3rver.js';
import { LocalHttpServer } from './helpers/local-http-server.js';
import { rawRequest } from './helpers/raw-request.js';

const demo = () => inject('fixtureTree');
const sha256 = (b: Uint8Array) => createHash('sha256').update(b).digest('hex');

let work: string;
/** The demo as a published store with packs of the contract's size, its objects one by one too. */
let store: string;
let packed: PackedStore;
/** 400 files of the demo with their own manifest: a source cheap to mirror again and again. */
let smallTree: string;

/** Objects of `dir` that are missing or do not hash to their name. */
function damage(dir: string, objects: Map<string, number>): { missing: string[]; wrong: string[] } {
  const missing: string[] = [];
  const wrong: string[] = [];
  for (const sha of objects.keys()) {
    const file = join(dir, objectKey(sha));
    if (!existsSync(file)) missing.push(sha);
    else if (sha256(readFileSync(file)) !== sha) wrong.push(sha);
  }
  return { missing, wrong };
}
const whole = { missing: [], wrong: [] };

let barriers = 0;
/** The requests a server logged, from its request log lines, once it has written them all: it writes
 * its log in batches, so a request made last is waited for in the log; those requests are left out. */
async function logged(server: RunningServer): Promise<{ path: string; status: number }[]> {
  const barrier = `/log-barrier-${++barriers}`;
  await (await fetch(`${server.base}${barrier}`)).arrayBuffer();
  await server.untilLogged((logs) => logs.includes(`"path":"${barrier}"`), 'the request made last, logged');
  return server
    .logs()
    .split('\n')
    .filter((l) => l.startsWith('{') && l.includes('"status"') && l.includes('"path"'))
    .map((l) => JSON.parse(l) as { path: string; status: number })
    .filter((r) => !r.path.startsWith('/log-barrier-'));
}

const serve = (dir: string) => startServer({ dir, extraArgs: ['--keys-dir', join(work, `keys-${Math.random()}`)] });

async function withServer<T>(dir: string, use: (server: RunningServer) => Promise<T>): Promise<T> {
  const server = await serve(dir);
  try {
    return await use(server);
  } finally {
    await server.stop();
  }
}

/** A static source over a store directory that answers single ranges (206), and can be told to cut
 * off the body of range answers after the first `cutAfter`, or to flip a byte at a pack offset. */
class RangeSource extends LocalHttpServer {
  cutAfter = Number.POSITIVE_INFINITY;
  flip: { pack: string; at: number } | null = null;
  requests: { path: string; range?: [number, number] }[] = [];
  private ranges = 0;
  constructor(private readonly dir: string) {
    super();
  }
  protected async answer(req: http.IncomingMessage, res: http.ServerResponse) {
    const path = normalize(new URL(req.url!, 'http://x').pathname).replace(/^\/+/, '');
    let body: Buffer;
    try {
      body = await readFile(join(this.dir, path));
    } catch {
      this.requests.push({ path });
      return void res.writeHead(404).end();
    }
    const m = /^bytes=(\d+)-(\d+)$/.exec(req.headers.range ?? '');
    if (!m) {
      this.requests.push({ path });
      return void res.writeHead(200).end(body);
    }
    const [start, end] = [Number(m[1]), Math.min(Number(m[2]), body.length - 1)];
    this.requests.push({ path, range: [start, end] });
    const part = Buffer.from(body.subarray(start, end + 1));
    if (this.flip && path === packKey(this.flip.pack) && this.flip.at >= start && this.flip.at <= end)
      part[this.flip.at - start] ^= 1;
    res.writeHead(206, { 'Content-Range': `bytes ${start}-${end}/${body.length}`, 'Content-Length': part.length });
    if (++this.ranges > this.cutAfter) {
      // Half the body, then the connection is dropped.
      return void res.write(part.subarray(0, part.length >> 1), () => res.destroy());
    }
    res.end(part);
  }
}

beforeAll(async () => {
  work = mkdtempSync(join(tmpdir(), 'isoatlas-pack-mirror-'));
  smallTree = join(work, 'small-tree');
  await writeSmallTree(demo(), smallTree, 400);
  store = join(work, 'store');
  packed = writePackedStore(demo(), store);
  console.log(
    `packed demo store: ${packed.objects.size} objects in ${packed.packs.length} packs of ${packed.packs.map((p) => p.pack.size).join(', ')} bytes`,
  );
});

// Three stores of the demo's objects to remove: on a busy machine that takes minutes.
afterAll(() => {
  if (work) rmSync(work, { recursive: true, force: true });
}, 900_000);

describe('planning range reads', () => {
  const hex = (i: number) => i.toString(16).padStart(64, '0');
  /** Scratch tables where a sync keeps the places of packed objects (removed with `work`). */
  const scratch = () => SyncScratch.open(mkdtempSync(join(work, 'scratch-')));
  /** One pack of objects of these lengths, as PackedObjects reads it. */
  async function packOf(lengths: number[]): Promise<{ objects: PackedObjects; index: PackIndex }> {
    let offset = 0;
    const index: PackIndex = {
      format: 1,
      pack: { sha256: 'f'.repeat(64), size: 0 },
      objects: lengths.map((length, i) => {
        const o: [string, number, number] = [hex(i + 1), offset, length];
        offset += length;
        return o;
      }),
    };
    index.pack.size = offset;
    const indexBody = Buffer.from(JSON.stringify(index));
    const list = Buffer.from(
      JSON.stringify({
        format: 1,
        packs: [
          {
            sha256: index.pack.sha256,
            size: offset,
            index: { sha256: 'e'.repeat(64), size: 1 },
            objects: lengths.length,
          },
        ],
      }),
    );
    const objects = new PackedObjects(scratch());
    await objects.add({ sha256: 'd'.repeat(64), size: list.length }, async (sha) =>
      sha === 'd'.repeat(64) ? list : indexBody,
    );
    return { objects, index };
  }

  it('joins wanted neighbours across gaps up to MAX_GAP_BYTES, splits past it and at MAX_RANGE_BYTES, and leaves objects in no pack (or listed with another size) to be read alone', async () => {
    const lengths = [1000, 1000, MAX_GAP_BYTES, 1000, MAX_GAP_BYTES + 1, 1000, MAX_RANGE_BYTES, 10];
    const { objects } = await packOf(lengths);
    const want = (...ids: number[]) => ids.map((i) => [hex(i), lengths[i - 1]] as [string, number]);
    // 1 and 2 touch, and 4 lies exactly MAX_GAP_BYTES (object 3) after 2: one range.
    const joined = await objects.plan(want(1, 2, 4));
    expect(joined.ranges.map((r) => [r.start, r.end, r.objects.length])).toEqual([[0, 2999 + MAX_GAP_BYTES, 3]]);
    // 1 and 4 are more than MAX_GAP_BYTES apart, and so are 4 and 6 (object 5); 6 and 7, and 7 and 8,
    // touch but would make a range longer than MAX_RANGE_BYTES.
    const { ranges, rest } = await objects.plan([...want(1, 4, 6, 7, 8), [hex(99), 5], [hex(2), 999]]);
    expect(ranges.map((r) => r.objects.map((o) => o.sha256))).toEqual([
      [hex(1)],
      [hex(4)],
      [hex(6)],
      [hex(7)],
      [hex(8)],
    ]);
    expect([...rest]).toEqual([
      [hex(99), 5],
      [hex(2), 999],
    ]);
  });

  it('reads the index of a pack the mirror held already only when an object is found in no other pack', async () => {
    const { index } = await packOf([10, 20]);
    const list = Buffer.from(
      JSON.stringify({
        format: 1,
        packs: [{ sha256: index.pack.sha256, size: 30, index: { sha256: 'e'.repeat(64), size: 1 }, objects: 2 }],
      }),
    );
    const read: string[] = [];
    const objects = new PackedObjects(scratch());
    await objects.add(
      { sha256: 'd'.repeat(64), size: list.length },
      async (sha) => {
        read.push(sha[0]);
        return sha === 'd'.repeat(64) ? list : Buffer.from(JSON.stringify(index));
      },
      (sha) => sha === 'e'.repeat(64),
    );
    // The index is still an object the release lists, so the mirror checks it is held.
    expect([...objects.metadata.keys()]).toEqual(['d'.repeat(64), 'e'.repeat(64)]);
    expect(read).toEqual(['d']);
    expect(await objects.where(index.objects[1][0], 20)).toMatchObject({ offset: 10, length: 20 });
    expect(read).toEqual(['d', 'e']);
    expect(await objects.where('9'.repeat(64), 5)).toBeNull();
    expect(read).toEqual(['d', 'e']);
  });

  it('refuses an index that does not describe the pack its list names', async () => {
    const { index } = await packOf([10, 20]);
    const list = Buffer.from(
      JSON.stringify({
        format: 1,
        packs: [{ sha256: index.pack.sha256, size: 30, index: { sha256: 'e'.repeat(64), size: 1 }, objects: 3 }],
      }),
    );
    const indexBody = Buffer.from(JSON.stringify(index));
    await expect(
      new PackedObjects(scratch()).add({ sha256: 'd'.repeat(64), size: 1 }, async (sha) =>
        sha === 'd'.repeat(64) ? list : indexBody,
      ),
    ).rejects.toThrow(
      /index of pack f{64}: it describes pack f{64} of 30 bytes and 2 objects, but the pack list names pack f{64} of 30 bytes and 3 objects/,
    );
  });
});

/** A mirror of `store`: its objects, no packs. */
let first: string;

describe('a mirror through packs', () => {
  it('over HTTP from `isoatlas serve` of a store: every object, verified, in a few range reads', async () => {
    first = join(work, 'first');
    await withServer(store, async (server) => {
      const s = await mirror({ from: server.base, to: first, progress: false });
      expect(s).toMatchObject({ release: packed.release, fetched: packed.objects.size, reused: 0, waited: 0 });
      expect(s.packs).toBe(packed.packs.length);
      expect(damage(first, packed.objects)).toEqual(whole);
      const requests = await logged(server);
      // The pointer, the history, the manifest, the pack list, each index, then ranges only.
      expect(requests.filter((r) => r.path.startsWith('/objects/'))).toHaveLength(2 + packed.packs.length);
      expect(requests.filter((r) => r.path.startsWith('/packs/'))).toHaveLength(s.ranges);
      expect(requests.length).toBeLessThan(50);
    });
  });

  it('chained: a mirror of `isoatlas serve` of that mirror (which rebuilds the packs from its objects), with default limits, in at most 300 requests and 2 minutes, no 429; byte-identical', async () => {
    const chained = join(work, 'chained');
    await withServer(first, async (server) => {
      const s = await mirror({ from: server.base, to: chained, progress: false });
      const requests = await logged(server);
      console.log(
        `chained demo sync through default limits: ${requests.length} requests, ${(s.bytes / 1e6).toFixed(1)} MB, ${s.seconds.toFixed(1)} s, ${s.ranges} ranges of ${s.packs} packs`,
      );
      expect(requests.length).toBeLessThanOrEqual(300);
      expect(s.requests).toBe(requests.length);
      expect(requests.filter((r) => r.status === 429)).toEqual([]);
      expect(s.waited).toBe(0);
      expect(s.seconds).toBeLessThan(120);
      expect(s.fetched).toBe(packed.objects.size);
    });
    expect(damage(chained, packed.objects)).toEqual(whole);
    const objects = (dir: string) => fg.sync('objects/**', { cwd: dir }).sort();
    expect(objects(chained)).toEqual(objects(first));
    expect(existsSync(join(chained, 'packs'))).toBe(false);
  });

  it('over S3 from a bucket that holds the packs and no object they hold', async () => {
    const s3dir = join(work, 's3-store');
    const small = writePackedStore(smallTree, s3dir, { objects: false, packBytes: 64 * 1024 });
    const s3rver = await startS3rver(['atlas']);
    const env = { id: process.env.AWS_ACCESS_KEY_ID, secret: process.env.AWS_SECRET_ACCESS_KEY };
    process.env.AWS_ACCESS_KEY_ID = 'S3RVER';
    process.env.AWS_SECRET_ACCESS_KEY = 'S3RVER';
    try {
      const bucket = new S3Backend(s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' }), 'atlas', 'pre/');
      for (const key of fg.sync('**', { cwd: s3dir }))
        await bucket.write(key, readFileSync(join(s3dir, key)), {
          contentType: 'application/octet-stream',
          cacheControl: 'no-cache',
        });
      const to = join(work, 's3-mirror');
      const s = await mirror({ from: 's3://atlas/pre', endpoint: s3rver.endpoint, to, progress: false });
      expect(s.fetched).toBe(small.objects.size);
      expect(s.packs).toBe(small.packs.length);
      expect(s.packs).toBeGreaterThan(5);
      expect(damage(to, small.objects)).toEqual(whole);
      // Each pack's first object lost: read again in a range inside its pack.
      for (const p of small.packs) rmSync(join(to, objectKey(p.objects[0][0])));
      const again = await mirror({ from: 's3://atlas/pre', endpoint: s3rver.endpoint, to, progress: false });
      expect(again).toMatchObject({ fetched: small.packs.length, ranges: small.packs.length });
      expect(damage(to, small.objects)).toEqual(whole);
    } finally {
      process.env.AWS_ACCESS_KEY_ID = env.id;
      process.env.AWS_SECRET_ACCESS_KEY = env.secret;
      await s3rver.stop();
    }
  });
});

describe('a sync from a pack source that fails', () => {
  let small: PackedStore;
  let source: RangeSource;
  beforeAll(async () => {
    small = writePackedStore(smallTree, join(work, 'small-store'), { packBytes: 16 * 1024 });
    source = new RangeSource(join(work, 'small-store'));
    await source.start();
  });
  afterAll(() => source?.stop());

  it('cut off inside a pack, keeps what it verified; the next run reads only the rest and ends whole', async () => {
    const to = join(work, 'cut');
    source.cutAfter = 3;
    await expect(mirror({ from: source.base, to, progress: false })).rejects.toThrow(/cut off|reset|terminated/);
    const held = small.objects.size - damage(to, small.objects).missing.length;
    expect(held).toBeGreaterThan(0);
    expect(held).toBeLessThan(small.objects.size / 2);
    source.cutAfter = Number.POSITIVE_INFINITY;
    source.requests = [];
    const s = await mirror({ from: source.base, to, progress: false });
    expect(s.fetched).toBe(small.objects.size - held);
    expect(damage(to, small.objects)).toEqual(whole);
    // No byte of a pack is read twice in this run, and what it read lies past what the cut-off run held.
    const packBytes = small.packs.reduce((n, p) => n + p.pack.size, 0);
    const read = source.requests.reduce((n, r) => n + (r.range ? r.range[1] - r.range[0] + 1 : 0), 0);
    expect(read).toBeLessThan(packBytes);
    expect(source.requests.filter((r) => r.path.startsWith('objects/') && !r.range).length).toBe(0);
  });

  it('with packs off (how the bench compares), reads every object on its own; the summary counts each request', async () => {
    const to = join(work, 'no-packs');
    source.requests = [];
    const s = await mirror({ from: source.base, to, progress: false, packs: false });
    // Every object of the release; the pack list and the indexes are not read without packs.
    const packed = new Set(small.packs.flatMap((p) => p.objects.map(([sha]) => sha)));
    const files = new Map([...small.objects].filter(([sha]) => packed.has(sha) || sha === small.manifestSha));
    expect(damage(to, files)).toEqual(whole);
    expect(source.requests.filter((r) => r.range || r.path.startsWith('packs/'))).toEqual([]);
    expect(s.requests).toBe(source.requests.length);
    expect(s.requests).toBeGreaterThanOrEqual(files.size);
  });

  it('a pack range with a flipped byte: the object is refused and said, not written, then read on its own', async () => {
    const to = join(work, 'flipped');
    const pack = small.packs.filter((p) => p.objects.length >= 3)[1];
    const [victim, offset] = pack.objects[1];
    source.flip = { pack: pack.pack.sha256, at: offset + 3 };
    source.requests = [];
    const lines: string[] = [];
    try {
      const s = await mirror({ from: source.base, to, progress: false, log: (l) => lines.push(l) });
      expect(s.fetched).toBe(small.objects.size);
    } finally {
      source.flip = null;
    }
    expect(lines.filter((l) => l.includes(victim))).toEqual([
      expect.stringMatching(
        new RegExp(
          `^${packKey(pack.pack.sha256)} bytes ${offset}-\\d+: hash to [0-9a-f]{64}, not to the sha256 ${victim} its index lists; not written, read on its own$`,
        ),
      ),
    ]);
    expect(source.requests.filter((r) => r.path === objectKey(victim))).toHaveLength(1);
    expect(damage(to, small.objects)).toEqual(whole);
  });
});

describe("`isoatlas serve`'s pack answers, streamed from a mirror's objects", () => {
  // One server of the first mirror for both: started by the first test to ask (a server just
  // started), then asked for each kind of answer.
  let serving: Promise<RunningServer> | undefined;
  const server = () => (serving ??= serve(first));
  afterAll(async () => void (await (await serving)?.stop()));

  it('a server just started answers the first pack requests, sent together, each with its range (not 404 while another reads the pack lists)', async () => {
    const asked = packed.packs.flatMap((p) => [0, 1, 2].map(() => p));
    expect(asked.length).toBeGreaterThan(2);
    const { base } = await server();
    const answers = await Promise.all(
      asked.map((p) => rawRequest(base, `/${packKey(p.pack.sha256)}`, { headers: { Range: 'bytes=0-99' } })),
    );
    expect(answers.map((a) => a.status)).toEqual(asked.map(() => 206));
  });

  it('whole, a range, a suffix range, HEAD, If-Range, 416 at and past the end, 404 for a pack no release names, 502 for a corrupt object where a range starts, an answer cut short where it is found later', async () => {
    const pack = packed.packs[0];
    const key = `/${packKey(pack.pack.sha256)}`;
    const bytes = readFileSync(join(store, packKey(pack.pack.sha256)));
    expect(existsSync(join(first, 'packs'))).toBe(false);
    const running = await server();
    const { base } = running;
    const get = (headers: Record<string, string> = {}, method = 'GET', path = key) =>
      rawRequest(base, path, { method, headers });
    const all = await get();
    expect(all.status).toBe(200);
    expect(sha256(all.body)).toBe(pack.pack.sha256);
    expect(all.headers).toMatchObject({
      etag: `"${pack.pack.sha256}"`,
      'accept-ranges': 'bytes',
      'content-type': 'application/octet-stream',
      'cache-control': 'public, max-age=31536000, immutable',
    });

    const [, offset, length] = pack.objects[7];
    const part = await get({ Range: `bytes=${offset - 5}-${offset + length + 5}` });
    expect(part.status).toBe(206);
    expect(part.headers['content-range']).toBe(`bytes ${offset - 5}-${offset + length + 5}/${pack.pack.size}`);
    expect(part.headers.etag).toBe(`"${pack.pack.sha256}"`);
    expect(part.body.equals(bytes.subarray(offset - 5, offset + length + 6))).toBe(true);

    const suffix = await get({ Range: 'bytes=-1000' });
    expect(suffix.status).toBe(206);
    expect(suffix.headers['content-range']).toBe(
      `bytes ${pack.pack.size - 1000}-${pack.pack.size - 1}/${pack.pack.size}`,
    );
    expect(suffix.body.equals(bytes.subarray(pack.pack.size - 1000))).toBe(true);
    const open = await get({ Range: `bytes=${pack.pack.size - 10}-` });
    expect([open.status, open.body.equals(bytes.subarray(pack.pack.size - 10))]).toEqual([206, true]);

    const head = await get({ Range: 'bytes=0-99' }, 'HEAD');
    expect([head.status, head.headers['content-length'], head.body.length]).toEqual([206, '100', 0]);
    const headAll = await get({}, 'HEAD');
    expect([headAll.status, headAll.headers['content-length'], headAll.body.length]).toEqual([
      200,
      String(pack.pack.size),
      0,
    ]);

    // A Range under an If-Range naming another representation: the whole pack.
    expect((await get({ Range: 'bytes=0-99', 'If-Range': '"other"' })).status).toBe(200);
    expect((await get({ Range: 'bytes=0-99', 'If-Range': `"${pack.pack.sha256}"` })).status).toBe(206);

    const past = await get({ Range: `bytes=${pack.pack.size}-${pack.pack.size + 10}` });
    expect(past.status).toBe(416);
    expect(past.headers['content-range']).toBe(`bytes */${pack.pack.size}`);
    expect(past.headers['content-type']).toBe('application/problem+json; charset=utf-8');
    // Open-ended from the end itself: nothing to send either (RFC 9110 §14.1.1).
    const atEnd = await get({ Range: `bytes=${pack.pack.size}-` });
    expect([atEnd.status, atEnd.headers['content-range']]).toEqual([416, `bytes */${pack.pack.size}`]);

    const unknown = await get({}, 'GET', `/${packKey('ab'.repeat(32))}`);
    expect([unknown.status, unknown.headers['content-type']]).toEqual([404, 'application/problem+json; charset=utf-8']);

    // One byte of an object of the pack flipped on disk: no answer that reads it carries wrong bytes.
    const [victim, at] = pack.objects[7];
    const file = join(first, objectKey(victim));
    const good = readFileSync(file);
    const bad = Buffer.from(good);
    bad[0] ^= 1;
    writeFileSync(file, bad);
    try {
      // Found where a range starts, before the answer begins: a 502 problem.
      for (const headers of [{ Range: `bytes=${at}-${at + 10}` }, { Range: `bytes=${at}-` }]) {
        const refused = await get(headers);
        expect(refused.status, JSON.stringify(headers)).toBe(502);
        expect(refused.headers['content-type']).toBe('application/problem+json; charset=utf-8');
      }
      // Found once the answer has begun (the whole pack is streamed, not held): cut short before
      // the damaged object's bytes, which the log says.
      await expect(get()).rejects.toThrow(/^200 answer cut short after (\d+) bytes/);
      await running.untilLogged((logs) => /"event":"answer_cut".*"reason":"body failed"/.test(logs), 'the cut logged');
      // A range that does not touch it is still answered.
      expect((await get({ Range: 'bytes=0-99' })).status).toBe(206);
    } finally {
      writeFileSync(file, good);
    }
    expect((await get({ Range: `bytes=${at}-${at + 10}` })).status).toBe(206);
  });
});

// Last: it changes what the first mirror holds.
describe('the first mirror, synced again', () => {
  it('a re-sync reads no pack; past the grace period its clean-up (gc) leaves the release whole', async () => {
    const metadata = [...packed.objects.keys()].filter((sha) => {
      const body = readFileSync(join(store, objectKey(sha)));
      return body.length < 4_000_000 && /^\{"format":1,"(pack|packs)":/.test(body.subarray(0, 20).toString());
    });
    expect(metadata).toHaveLength(1 + packed.packs.length);
    await withServer(store, async (server) => {
      const s = await mirror({
        from: server.base,
        to: first,
        progress: false,
        now: () => new Date(Date.now() + (DEFAULT_GRACE_HOURS + 1) * 3_600_000),
      });
      expect(s).toMatchObject({ fetched: 0, ranges: 0 });
      expect((await logged(server)).map((r) => r.path)).toEqual(['/current.json', '/releases.json']);
    });
    // The pack list and the indexes are the release's objects too (build/publish/sweep.ts).
    expect(metadata.filter((sha) => !existsSync(join(first, objectKey(sha))))).toEqual([]);
    expect(damage(first, new Map([...packed.objects].filter(([sha]) => !metadata.includes(sha))))).toEqual(whole);
  });
});

describe("a chained mirror of a release whose pack list names an earlier release's packs", () => {
  it('asks for the wanted objects alone where a joined range covers objects the serving mirror does not hold, and ends whole', async () => {
    // Release 1 is the small tree; release 2 changes every 7th file. publish (build/publish/packing.ts)
    // packs release 2's new objects and names release 1's packs for the rest, which also hold release
    // 1's versions of the changed files: a mirror keeping release 2 alone never fetches those.
    const { entries } = readManifest(smallTree);
    const tree2 = join(work, 'small-tree-2');
    const changed: typeof entries = entries.map((e, i) => {
      const body = readFileSync(join(smallTree, e.path));
      const next = i % 7 === 3 ? Buffer.concat([body, Buffer.from('\n')]) : body;
      mkdirSync(dirname(join(tree2, e.path)), { recursive: true });
      writeFileSync(join(tree2, e.path), next);
      return { ...e, size: next.length, sha256: sha256(next) };
    });
    await writeManifest(tree2, 'small-2', changed);
    const published = join(work, 'two-releases');
    const store = new ReleaseStore(new DirectoryBackend(published));
    await publish({ dir: smallTree, store, progress: false, packTargetBytes: 64 * 1024 });
    await publish({ dir: tree2, store, progress: false, packTargetBytes: 64 * 1024 });
    const upstream = join(work, 'holds-release-2');
    await withServer(published, (server) => mirror({ from: server.base, to: upstream, keep: 1, progress: false }));
    const wanted = new Map(changed.map((e) => [e.sha256, e.size]));
    const downstream = join(work, 'chained-release-2');
    await withServer(upstream, async (server) => {
      const s = await mirror({ from: server.base, to: downstream, keep: 1, progress: false });
      expect(s.release).toBe('small-2');
      const packAnswers = (await logged(server)).filter((r) => r.path.startsWith('/packs/'));
      // Some joined ranges covered release 1's objects and were refused (404), then read in runs.
      expect(packAnswers.filter((r) => r.status === 404).length).toBeGreaterThan(0);
      expect(packAnswers.filter((r) => r.status >= 500)).toEqual([]);
      expect(packAnswers.length).toBeLessThan(wanted.size / 2);
      // Objects requested one by one: the manifest, the pack list and the indexes, not the files.
      const objectAnswers = (await logged(server)).filter((r) => r.path.startsWith('/objects/'));
      expect(objectAnswers.length).toBe(2 + s.packs);
    });
    expect(damage(downstream, wanted)).toEqual(whole);
  });
});

describe('a re-sync after a 1% change', () => {
  it('reads no shard of the release it held, each new head only down to the base it holds whole, and no index of a pack it had; it ends whole', async () => {
    const { entries } = readManifest(smallTree);
    const tree2 = join(work, 'small-tree-1pct');
    const changed = entries.map((e, i) => {
      const body = readFileSync(join(smallTree, e.path));
      const next = i % 100 === 42 ? Buffer.concat([body, Buffer.from('\n')]) : body;
      mkdirSync(dirname(join(tree2, e.path)), { recursive: true });
      writeFileSync(join(tree2, e.path), next);
      return { ...e, size: next.length, sha256: sha256(next) };
    });
    await writeManifest(tree2, 'small-1pct', changed);
    const published = join(work, 'one-percent');
    const store = new ReleaseStore(new DirectoryBackend(published));
    await publish({ dir: smallTree, store, progress: false, packTargetBytes: 64 * 1024 });
    const to = join(work, 'mirror-one-percent');
    const release1 = await withServer(published, (server) => mirror({ from: server.base, to, progress: false }));
    expect(release1.unchanged).toBe(0);
    await publish({ dir: tree2, store, progress: false, packTargetBytes: 64 * 1024 });
    const shards = readManifest(smallTree).index.shards.length;
    await withServer(published, async (server) => {
      const s = await mirror({ from: server.base, to, progress: false });
      expect(s.releases).toEqual([release1.release, 'small-1pct']);
      // Release 1's shards are not read; release 2's heads are new deltas over release 1's heads,
      // read down to them: what the sync looks at is the change, not the release.
      expect(s.unchanged).toBe(shards);
      expect(s.fetched).toBeGreaterThanOrEqual(4);
      expect(s.fetched + s.reused).toBeLessThan(entries.length / 5);
      expect(s.hashed).toBe(0);
      // One object at a time: manifest.json, the new pack list and the new packs' indexes.
      const objectAnswers = (await logged(server)).filter((r) => r.path.startsWith('/objects/'));
      expect(objectAnswers.length).toBe(2 + s.packs);
      expect(damage(to, new Map(changed.map((e) => [e.sha256, e.size])))).toEqual(whole);
      expect(damage(to, new Map(entries.map((e) => [e.sha256, e.size])))).toEqual(whole);
      // And again (the same server): everything it holds is whole, nothing is read.
      const again = await mirror({ from: server.base, to, progress: false });
      expect(again).toMatchObject({ fetched: 0, hashed: 0, unchanged: 2 * shards });
    });
  });
});
