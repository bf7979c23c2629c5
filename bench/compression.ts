// Compression: what each coding and level makes of the demo tree's files (bytes, and compress time per
// MiB), how much a small body saves, what compressing costs `isoatlas serve` (a gene record at full
// speed, identity against gzip and brotli from its cache), and what the nginx front's compressed copies
// cost `isoatlas nginx-config` (the figures behind edge/compression.ts and docs/ARCHITECTURE.md).
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import { join } from 'node:path';
import zlib from 'node:zlib';
import type { BenchContext } from './context.js';
import { load, type LoadResult } from './load.js';
import type { SectionReport } from './report.js';
import { pickSamples } from './samples.js';
import { startLocalServer, startNginxFront, type RunningServer } from './servers.js';
import { fmt, fmtSummary, mib, summarize } from './stats.js';
import { nginxConfig } from '../edge/server/nginx-config.js';

const LEVELS: { name: string; compress: (b: Buffer) => Buffer }[] = [
  ...[1, 6, 9].map((level) => ({ name: `gzip ${level}`, compress: (b: Buffer) => zlib.gzipSync(b, { level }) })),
  ...[4, 6, 9, 11].map((q) => ({
    name: `br ${q}`,
    compress: (b: Buffer) =>
      zlib.brotliCompressSync(b, {
        params: { [zlib.constants.BROTLI_PARAM_QUALITY]: q, [zlib.constants.BROTLI_PARAM_SIZE_HINT]: b.length },
      }),
  })),
];

const CONNECTIONS = 10;

export async function benchCompression(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const perClass = ctx.opts.quick ? 100 : 1000;
  const genes = join(tree, 'api/v1/genes');
  const isoforms = join(tree, 'api/v1/isoforms');
  const classes: [string, string[]][] = [
    [
      'gene records',
      readdirSync(genes)
        .filter((f) => f.endsWith('.json'))
        .map((f) => join(genes, f)),
    ],
    [
      'isoform records',
      readdirSync(isoforms)
        .filter((f) => f.endsWith('.json'))
        .map((f) => join(isoforms, f)),
    ],
    [
      'isoform list pages',
      readdirSync(genes, { withFileTypes: true })
        .filter((d) => d.isDirectory())
        .map((d) => join(genes, d.name, 'isoforms/0.json')),
    ],
    ['structure files (mmCIF)', readdirSync(join(tree, 'structures')).map((f) => join(tree, 'structures', f))],
  ];
  const sizeRows: string[][] = [];
  const timeRows: string[][] = [];
  for (const [name, all] of classes) {
    const bodies = all.slice(0, perClass).map((f) => readFileSync(f));
    const total = bodies.reduce((n, b) => n + b.length, 0);
    const sizes = bodies.map((b) => b.length).sort((a, b) => a - b);
    const sizeRow = [name, String(bodies.length), fmt(sizes[sizes.length >> 1]), fmt(total / bodies.length)];
    const timeRow = [name];
    for (const level of LEVELS) {
      const times: number[] = [];
      let out = 0;
      for (let run = 0; run < ctx.opts.runs; run++) {
        out = 0;
        const t = performance.now();
        for (const b of bodies) out += level.compress(b).length;
        times.push((performance.now() - t) / mib(total));
      }
      sizeRow.push(`${((100 * out) / total).toFixed(1)}%`);
      timeRow.push(fmtSummary(summarize(times), 0));
    }
    sizeRows.push(sizeRow);
    timeRows.push(timeRow);
    ctx.log(`  ${name}: ${sizeRow.slice(4).join(' ')}`);
  }

  // Small bodies: the start of a gene record, cut to each size.
  const record = readFileSync(classes[0][1].find((f) => readFileSync(f).length > 2048)!);
  const smallRows = [64, 128, 256, 512, 1024, 2048].map((n) => {
    const b = record.subarray(0, n);
    return [String(n), String(zlib.gzipSync(b, { level: 6 }).length), String(LEVELS[4].compress(b).length)];
  });

  // The server, a gene record as fast as it answers, by coding; then through the front.
  const s = pickSamples(tree);
  const gene = `/api/v1/genes/${s.geneId}`;
  const seconds = ctx.opts.quick ? 3 : 10;
  const codings = [
    ['identity', 'identity'],
    ['gzip', 'gzip'],
    ['br', 'gzip, deflate, br'],
  ] as const;
  const speed = new Map<string, { serve: LoadResult[]; front: LoadResult[] }>(
    codings.map(([c]) => [c, { serve: [], front: [] }]),
  );
  const started: RunningServer[] = [];
  let precompress = { first: NaN, again: NaN, copies: 0, bytes: 0 };
  try {
    const serve = await startLocalServer(tree, ctx.tmp, { serveArgs: ['--trust-proxy', '127.0.0.1'] }).then(
      (x) => (started.push(x), x),
    );
    const front = await startNginxFront(tree, ctx.tmp, serve).then((x) => (started.push(x), x));
    for (let run = 0; run < ctx.opts.runs; run++) {
      for (const [coding, accept] of codings) {
        for (const [server, into] of [
          [serve, speed.get(coding)!.serve],
          [front, speed.get(coding)!.front],
        ] as const) {
          const x = await load({
            base: server.base,
            paths: [gene],
            connections: CONNECTIONS,
            seconds,
            headers: { 'Accept-Encoding': accept },
          });
          if (Object.keys(x.status).some((code) => code !== '200') || x.socketErrors)
            throw new Error(`${server.name} ${gene} (${coding}): ${JSON.stringify(x.status)}`);
          into.push(x);
        }
      }
    }
    // The front's copies of the demo tree: written into an empty directory, then with every copy there.
    const dir = mkdtempSync(join(ctx.tmp, 'compressed-'));
    const opts = {
      dir: tree,
      compressedDir: dir,
      upstream: '127.0.0.1:1',
      listen: '1',
      serverName: '_',
      accessLog: '/dev/null',
      version: 'bench',
    };
    let t = performance.now();
    const first = await nginxConfig(opts);
    const firstS = (performance.now() - t) / 1000;
    t = performance.now();
    await nginxConfig(opts);
    const againS = (performance.now() - t) / 1000;
    let bytes = 0;
    for (const sub of readdirSync(dir))
      for (const f of readdirSync(join(dir, sub))) bytes += readFileSync(join(dir, sub, f)).length;
    precompress = { first: firstS, again: againS, copies: first.compressed.written, bytes };
    rmSync(dir, { recursive: true, force: true });
  } finally {
    for (const server of started) await server.stop();
  }
  const rps = (list: LoadResult[]) => fmtSummary(summarize(list.map((x) => x.rps)), 0);
  const kib = (list: LoadResult[]) => fmt(summarize(list.map((x) => x.rps)).median, 0);
  const speedRows = codings.map(([c]) => [c, rps(speed.get(c)!.serve), rps(speed.get(c)!.front)]);
  const levelNames = LEVELS.map((l) => l.name);
  return {
    id: 'compression',
    title: 'Compression: codings, levels, and their cost',
    method: `Node's zlib (sync) over the first ${perClass} files of each kind in the demo tree, ${ctx.opts.runs} runs (compress time per MiB of input: median and spread). The server and its nginx front as in the server section (autocannon, ${CONNECTIONS} connections, ${seconds} s per run, ${ctx.opts.runs} runs) on one gene record (${gene}) as fast as each answers, with Accept-Encoding identity, gzip, or a browser's "gzip, deflate, br"; the server compresses each body once and keeps it. The front's copies: \`nginxConfig\` in the bench process on the demo tree, into an empty directory, then again with every copy in place.`,
    tables: [
      {
        caption: 'Bytes, as a share of identity',
        headers: ['files', 'n', 'median bytes', 'mean bytes', ...levelNames],
        rows: sizeRows,
      },
      { caption: 'Compress time (ms per MiB of input)', headers: ['files', ...levelNames], rows: timeRows },
      {
        caption: 'A gene record cut to a size: bytes compressed',
        headers: ['identity bytes', 'gzip 6', 'br 6'],
        rows: smallRows,
      },
      {
        caption: `A gene record as fast as answered (requests/s)`,
        headers: ['coding', 'serve', 'nginx front'],
        rows: speedRows,
      },
      {
        caption: "The nginx front's compressed copies of the demo tree (isoatlas nginx-config)",
        headers: [
          'copies written',
          'bytes of copies',
          'config with copies written (s)',
          'config with copies present (s)',
        ],
        rows: [
          [
            fmt(precompress.copies),
            `${fmt(mib(precompress.bytes), 1)} MiB`,
            fmt(precompress.first, 1),
            fmt(precompress.again, 1),
          ],
        ],
      },
    ],
    targets: [],
    notes: [
      'The byte shares do not depend on the machine; the times do, and a busy machine spreads them: compare levels within a row.',
      'The server compresses a body once per coding and answers from its cache afterwards, so its compressed answers cost about what identity ones do; the front sends the copies nginx-config wrote.',
      'The copies are written once per file content: a regenerated config after a sync compresses only the files that changed.',
    ],
    headline: `gene record br ${sizeRows[0][4 + levelNames.indexOf('br 6')]} of identity; serve ${kib(speed.get('identity')!.serve)}/s identity, ${kib(speed.get('br')!.serve)}/s br`,
  };
}
