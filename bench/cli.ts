// The command line's start: `isoatlas --help` and `isoatlas --version` as a user runs them (a new
// Node process on the compiled CLI), wall time from spawn to exit. Target (issue #18): ≤ 0.3 s.
import { spawnSync } from 'node:child_process';
import { CLI } from './context.js';
import type { SectionReport } from './report.js';
import { fmtSummary, quantile, summarize } from './stats.js';

const TARGET_MS = 300;

function wallMs(args: string[]): number {
  const started = performance.now();
  const r = spawnSync(process.execPath, [CLI, ...args], { stdio: 'ignore' });
  if (r.status !== 0) throw new Error(`isoatlas ${args.join(' ')} exited ${r.status}`);
  return performance.now() - started;
}

export async function benchCli(ctx: {
  opts: { runs: number; quick: boolean };
  log: (line: string) => void;
}): Promise<SectionReport> {
  const perRun = ctx.opts.quick ? 5 : 20;
  const rows: string[][] = [];
  let helpMedian = 0;
  for (const args of [['--help'], ['--version']]) {
    wallMs(args); // warm the file cache
    const medians: number[] = [];
    const p90s: number[] = [];
    for (let run = 0; run < ctx.opts.runs; run++) {
      const times = Array.from({ length: perRun }, () => wallMs(args));
      medians.push(quantile(times, 0.5));
      p90s.push(quantile(times, 0.9));
    }
    if (args[0] === '--help') helpMedian = summarize(medians).median;
    rows.push([`\`isoatlas ${args.join(' ')}\``, fmtSummary(summarize(medians)), fmtSummary(summarize(p90s))]);
    ctx.log(`  isoatlas ${args.join(' ')}: median ${summarize(medians).median.toFixed(0)} ms`);
  }
  return {
    id: 'cli',
    title: 'Command-line start',
    method: `\`node bin/isoatlas.mjs <args>\` spawned ${perRun} times per run, ${ctx.opts.runs} runs, after one warm-up; wall time from spawn to exit of each. The CLI is the compiled dist/ (bin/compile.mjs), whose commands load their modules only when they run.`,
    tables: [{ headers: ['command', 'median (ms)', 'p90 (ms)'], rows }],
    targets: [
      {
        what: '`isoatlas --help` start (median)',
        target: `≤ ${TARGET_MS} ms`,
        measured: `${helpMedian.toFixed(0)} ms`,
        met: helpMedian <= TARGET_MS,
      },
    ],
    notes: ['Other work on the machine lengthens a process start more than anything else measured here.'],
    headline: `--help ${helpMedian.toFixed(0)} ms`,
  };
}
