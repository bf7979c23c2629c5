// Packs (edge/contract/packs.ts): the figures behind keeping each object beside the packs instead of
// answering the CDN's reads from ranges of packs (docs/ARCHITECTURE.md, "Packs"). The demo release is
// published to s3rver with conditional writes (bin/local-s3.cjs); then, from that bucket:
//   - bytes stored: the objects alone, and the packs beside them;
//   - requests of a first mirror sync: one per object, against the pack list, indexes and packs;
//   - answer latency at the origin: N objects read one by one, against the same bytes read as a
//     range of their pack, its index already at hand (the origin would keep indexes cached), and the
//     time to fetch and parse one pack index cold.
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { join } from 'node:path';
import type { BenchContext } from './context.js';
import type { SectionReport } from './report.js';
import { startS3rver } from './s3rver.js';
import { fmt, fmtSummary, mib, summarize } from './stats.js';
import { publish, s3Client } from '../build/publish/publish.js';
import { openStore } from '../build/publish/s3-client.js';
import { readPacks, type Pack } from '../build/publish/packing.js';
import { parseManifestIndex } from '../edge/contract/manifest.js';
import { objectKey } from '../edge/contract/store-layout.js';
import { packKey, parsePackIndex } from '../edge/contract/packs.js';

const BUCKET = 'packs-bench';

async function timedGet(s3: S3Client, key: string, range?: string): Promise<{ ms: number; bytes: number }> {
  const started = performance.now();
  const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: key, Range: range }));
  const bytes = (await got.Body!.transformToByteArray()).length;
  return { ms: performance.now() - started, bytes };
}

export async function benchPacks(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const n = ctx.opts.quick ? 50 : 300;
  // s3rver takes any credentials, but the SDK wants some.
  process.env.AWS_ACCESS_KEY_ID ??= 'S3RVER';
  process.env.AWS_SECRET_ACCESS_KEY ??= 'S3RVER';
  const s3rver = await startS3rver(join(ctx.tmp, 's3rver-packs'), [BUCKET], { conditionalWrites: true });
  try {
    const s3 = s3Client({ endpoint: s3rver.endpoint, region: 'us-east-1' });
    const published = await publish({ dir: tree, bucket: BUCKET, s3, progress: false });
    const store = openStore({ bucket: BUCKET, s3 });
    const objects = await store.objects();
    const packsListed = await store.packs();
    const objectBytes = [...objects.values()].reduce((n, o) => n + o.size, 0);
    const packBytes = [...packsListed.values()].reduce((n, o) => n + o.size, 0);
    const pointer = (await store.pointer())!;
    const index = parseManifestIndex((await store.get(objectKey(pointer.manifest_sha256)))!.body, 'manifest.json');
    const packs: Pack[] = [];
    await readPacks(store, index, 'the demo release', (p) => void packs.push(p));
    // A first sync reads the pointer, the history and manifest.json either way; then one request per
    // object, or the pack list, each index and each pack.
    const perObject = 3 + objects.size - 1;
    const perPack = 3 + 1 + 2 * packs.length;

    // The same objects both ways, spread over the packs, in the same order.
    const where = packs.flatMap((p) =>
      p.index.objects.map(([sha, offset, length]) => ({ pack: p.ref.sha256, sha, offset, length })),
    );
    const step = Math.max(1, Math.floor(where.length / n));
    const sample = where.filter((_, i) => i % step === 0).slice(0, n);
    const one: number[] = [];
    const ranged: number[] = [];
    for (const [i, o] of sample.entries()) {
      // Alternate which goes first, so neither always meets a warm disk cache.
      const a = () => timedGet(s3, objectKey(o.sha)).then((r) => one.push(r.ms));
      const b = () =>
        timedGet(s3, packKey(o.pack), `bytes=${o.offset}-${o.offset + o.length - 1}`).then((r) => {
          if (r.bytes !== o.length)
            throw new Error(`a range of pack ${o.pack} answered ${r.bytes} bytes, not ${o.length}`);
          ranged.push(r.ms);
        });
      if (i % 2) {
        await a();
        await b();
      } else {
        await b();
        await a();
      }
    }
    const coldIndex: number[] = [];
    for (const p of packs) {
      const started = performance.now();
      const got = await s3.send(new GetObjectCommand({ Bucket: BUCKET, Key: objectKey(p.ref.index.sha256) }));
      parsePackIndex(await got.Body!.transformToByteArray(), 'index');
      coldIndex.push(performance.now() - started);
    }
    const sOne = summarize(one);
    const sRanged = summarize(ranged);
    const sIndex = summarize(coldIndex);
    ctx.log(
      `packs: ${packs.length} packs of ${mib(packBytes).toFixed(1)} MiB beside ${objects.size} objects of ${mib(objectBytes).toFixed(1)} MiB; object ${fmtSummary(sOne, 1, ' ms')}, range ${fmtSummary(sRanged, 1, ' ms')}`,
    );
    return {
      id: 'packs',
      title: 'Packs: objects beside packs, or ranges of packs at the origin',
      method:
        `The demo release published to s3rver (bin/local-s3.cjs) in ${published.seconds.toFixed(1)} s; bytes as listed in the bucket; ` +
        `request counts of a first mirror sync counted from the release's objects and packs; ${sample.length} objects spread over its packs read one by one ` +
        'and as byte ranges of their pack (the index already in memory), alternating which goes first, one request at a time; each pack index fetched and parsed once.',
      tables: [
        {
          headers: ['', 'objects alone', 'packs beside them'],
          rows: [
            ['files in the bucket', fmt(objects.size), fmt(objects.size + packsListed.size)],
            ['MiB stored', mib(objectBytes).toFixed(1), mib(objectBytes + packBytes).toFixed(1)],
            ['requests of a first mirror sync', fmt(perObject), fmt(perPack)],
          ],
        },
        {
          headers: ['one object, at the origin', 'median (spread)'],
          rows: [
            ['GET objects/<sha256>', fmtSummary(sOne, 1, ' ms')],
            ['GET a range of packs/<sha256>, index in memory', fmtSummary(sRanged, 1, ' ms')],
            [`GET and parse a pack index (${packs.length} of them)`, fmtSummary(sIndex, 1, ' ms')],
          ],
        },
      ],
      targets: [],
      notes: [
        `${packs.length} packs hold ${fmt(where.length)} objects; the largest pack has ${fmt(Math.max(...packs.map((p) => p.ref.objects)))} objects.`,
      ],
      headline: `packs +${((100 * packBytes) / objectBytes).toFixed(0)}% bytes, ${fmt(perPack)} vs ${fmt(perObject)} sync requests`,
    };
  } finally {
    await s3rver.stop();
  }
}
