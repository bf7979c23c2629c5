// Section 2: the edge handler in-process, per route: requests/s of sequential requests, p50/p99
// latency and allocation per request, over the demo tree with the local server's origin.
import { createHandler } from '../edge/handler.js';
import { LocalTreeOrigin } from '../edge/origins/local.js';
import type { BenchContext } from './context.js';
import { allocationPerCall } from './gc.js';
import type { SectionReport } from './report.js';
import { handlerRoutes, pickSamples } from './samples.js';
import { fmt, fmtSummary, quantile, summarize } from './stats.js';

const HOST = 'http://127.0.0.1:8080';

export async function benchHandler(ctx: BenchContext): Promise<SectionReport> {
  const { tree } = await ctx.demo();
  const handler = createHandler({ origin: new LocalTreeOrigin(tree), serveStructureFiles: true });
  const routes = handlerRoutes(pickSamples(tree));
  const perRun = ctx.opts.quick ? 300 : 2000;
  const warmup = ctx.opts.quick ? 100 : 500;

  async function call(path: string, expected: number): Promise<void> {
    const res = await handler(new Request(HOST + path), { clientIp: '127.0.0.1' });
    await res.arrayBuffer(); // the adapter reads the whole body, so the benchmark does too
    if (res.status !== expected) throw new Error(`${path} answered ${res.status}, expected ${expected}`);
  }

  const rows: string[][] = [];
  for (const r of routes) {
    for (let i = 0; i < warmup; i++) await call(r.path, r.status);
    const rps: number[] = [];
    const p50: number[] = [];
    const p99: number[] = [];
    const alloc: number[] = [];
    for (let run = 0; run < ctx.opts.runs; run++) {
      const latencies = new Float64Array(perRun);
      const started = performance.now();
      for (let i = 0; i < perRun; i++) {
        const t = performance.now();
        await call(r.path, r.status);
        latencies[i] = performance.now() - t;
      }
      const elapsed = (performance.now() - started) / 1000;
      const list = [...latencies];
      rps.push(perRun / elapsed);
      p50.push(quantile(list, 0.5) * 1000);
      p99.push(quantile(list, 0.99) * 1000);
      const bytes = await allocationPerCall(() => call(r.path, r.status));
      if (bytes !== null) alloc.push(bytes / 1024);
    }
    const a = alloc.length ? fmtSummary(summarize(alloc), 1) : 'n/a (GC in every batch)';
    rows.push([
      r.name,
      `\`${r.path.replace('/api/v1', '')}\``,
      fmtSummary(summarize(rps)),
      fmtSummary(summarize(p50)),
      fmtSummary(summarize(p99)),
      a,
    ]);
    ctx.log(`  ${r.name}: ${fmt(summarize(rps).median)} req/s, p99 ${fmt(summarize(p99).median)} µs`);
  }
  const rpsOf = (name: string) => rows.find((row) => row[0] === name)?.[2] ?? '?';
  return {
    id: 'handler',
    title: '2. Edge handler in-process, per route',
    method: `\`createHandler\` over \`LocalTreeOrigin\` (as \`isoatlas serve\` builds it, without access control) on the demo tree, called directly with a Web \`Request\`, body read to the end. Per route: ${warmup} warm-up requests, then ${ctx.opts.runs} runs of ${perRun} sequential requests (requests/s = ${perRun} ÷ run time; p50/p99 of per-request \`performance.now()\` times). Allocation: growth of V8 heap + ArrayBuffers over a batch of up to 64 requests in which no GC ran (GC performance observer; a batch that saw one is retried smaller), after a forced full GC.`,
    tables: [{ headers: ['route', 'path', 'requests/s', 'p50 (µs)', 'p99 (µs)', 'allocated per request (KiB)'], rows }],
    targets: [],
    notes: [],
    headline: `handler gene by symbol ${rpsOf('gene by symbol')} req/s`,
  };
}
