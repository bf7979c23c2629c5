// `npm run bench:suite -- [--load N] [--runs N] [--unit]`: times the README's test command on a fresh
// clone of HEAD, as a new user would run it (`npm ci`, then `npm test` or `npm run test:unit`), alone
// or while other work keeps the machine busy: --load N starts N processes that each spin a core for
// the whole run. Prints each run's wall time, exit code, runner errors, the load it met (sampled), the
// test counts and the slowest files, then a one-line summary. BENCHMARKS.md's "Tests" section comes
// from it, measured by hand: a run takes minutes to tens of minutes.
import { Command, InvalidArgumentError } from 'commander';
import { type ChildProcess, execFileSync, spawn } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { ROOT } from './context.js';
import { gitCommit } from './machine.js';
import treeKill from 'tree-kill';

const count = (v: string) => {
  if (!/^\d+$/.test(v)) throw new InvalidArgumentError('expected a whole number');
  return Number(v);
};

/** Text in a run's output that is the runner failing, not a test. */
const RUNNER_ERRORS = [/\[vitest-worker\]/, /Unhandled (Rejection|Error)/, /Timeout calling/, /Errors? occurred while/];

interface RunResult {
  seconds: number;
  code: number | null;
  runnerErrors: string[];
  load: { min: number; max: number; mean: number };
  tests: string | null;
  files: string | null;
  slowest: string[];
}

// Plain spinning: the load a shared CI machine's other jobs put on its cores. A spinner looks up
// now and then and stops once the bench that started it is gone, killed or not.
const SPIN = `const parent = process.ppid;
for (let i = 1; ; i++) {
  Math.sqrt(Math.random());
  if (i % 10000000 === 0 && process.ppid !== parent) process.exit(0);
}`;

function busy(n: number): ChildProcess[] {
  return Array.from({ length: n }, () => spawn(process.execPath, ['-e', SPIN], { stdio: 'ignore' }));
}

/** The run in progress: stopping the bench stops it and every process under it. */
let running: ChildProcess | null = null;

function runOnce(dir: string, script: string): Promise<RunResult> {
  return new Promise((resolve) => {
    const started = Date.now();
    const loads: number[] = [];
    const sampler = setInterval(() => loads.push(loadavg()[0]), 10_000);
    let out = '';
    const child = spawn('npm', script === 'test' ? ['test'] : ['run', script], {
      cwd: dir,
      env: { ...process.env, NO_COLOR: '1', FORCE_COLOR: '0' },
      // Not detached: a new session would be a scheduling group of its own (Linux's autogroup),
      // given a group's share of the cores beside the spinners' instead of a process's share each.
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    running = child;
    const take = (chunk: Buffer) => {
      out += chunk.toString('utf8');
      const progress = chunk
        .toString('utf8')
        .split('\n')
        .filter((l) => l.startsWith('[progress]'));
      for (const line of progress) process.stderr.write(`  ${line}\n`);
    };
    child.stdout.on('data', take);
    child.stderr.on('data', take);
    child.once('close', (code) => {
      running = null;
      clearInterval(sampler);
      const lines = out.split('\n');
      const at = lines.findIndex((l) => l.startsWith('[progress] slowest files'));
      resolve({
        seconds: (Date.now() - started) / 1000,
        code,
        runnerErrors: lines.filter((l) => RUNNER_ERRORS.some((re) => re.test(l))).slice(0, 5),
        load: {
          min: Math.min(...loads),
          max: Math.max(...loads),
          mean: loads.reduce((a, b) => a + b, 0) / Math.max(1, loads.length),
        },
        tests: lines.find((l) => /^\s*Tests\s/.test(l))?.trim() ?? null,
        files: lines.find((l) => /^\s*Test Files\s/.test(l))?.trim() ?? null,
        slowest: at < 0 ? [] : lines.slice(at + 1, at + 11).map((l) => l.trim()),
      });
    });
  });
}

async function main(argv: string[]): Promise<number> {
  const cli = new Command('suite')
    .description("Time the README's test command on a fresh clone of HEAD, alone or beside spinning processes.")
    .option('--load <n>', 'processes spinning a core each during the runs', count, 0)
    .option('--runs <n>', 'runs in a row, on one clone', count, 1)
    .option('--unit', 'npm run test:unit instead of npm test', false)
    .parse(argv);
  const o = cli.opts<{ load: number; runs: number; unit: boolean }>();
  const script = o.unit ? 'test:unit' : 'test';
  const dir = mkdtempSync(join(tmpdir(), 'isoatlas-suite-'));
  const commit = gitCommit(ROOT);
  // Interrupted: stop the run's processes and remove the clone this bench made, then exit.
  for (const signal of ['SIGINT', 'SIGTERM'] as const)
    process.once(signal, () => {
      const stop = () => {
        rmSync(dir, { recursive: true, force: true });
        console.error(`suite: stopped by ${signal}; removed ${dir}`);
        process.exit(signal === 'SIGINT' ? 130 : 143);
      };
      if (running?.pid) treeKill(running.pid, 'SIGKILL', stop);
      else stop();
    });
  try {
    execFileSync('git', ['clone', '--quiet', '--no-hardlinks', ROOT, dir], { stdio: 'inherit' });
    process.stderr.write(`fresh clone of ${commit} in ${dir}; npm ci\n`);
    const installStarted = Date.now();
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: ['ignore', 'ignore', 'inherit'] });
    process.stderr.write(`npm ci: ${((Date.now() - installStarted) / 1000).toFixed(0)} s\n`);
    const spinners = busy(o.load);
    const results: RunResult[] = [];
    try {
      for (let i = 1; i <= o.runs; i++) {
        process.stderr.write(
          `run ${i}/${o.runs}: npm ${script === 'test' ? 'test' : `run ${script}`}, ${o.load} spinning\n`,
        );
        const r = await runOnce(dir, script);
        results.push(r);
        console.log(
          `run ${i}: ${r.seconds.toFixed(0)} s, exit ${r.code}, load ${r.load.min.toFixed(1)}-${r.load.max.toFixed(1)} (mean ${r.load.mean.toFixed(1)}); ${r.files}; ${r.tests}; runner errors: ${r.runnerErrors.length ? r.runnerErrors.join(' | ') : 'none'}`,
        );
        for (const s of r.slowest) console.log(`    ${s}`);
      }
    } finally {
      for (const s of spinners) s.kill('SIGKILL');
    }
    const failed = results.filter((r) => r.code !== 0 || r.runnerErrors.length > 0).length;
    console.log(
      `${script} at ${commit}, ${o.load} spinning: ${results.map((r) => `${r.seconds.toFixed(0)} s`).join(', ')}; ${failed === 0 ? 'every run exit 0, no runner error' : `${failed} of ${results.length} runs failed`}`,
    );
    return failed === 0 ? 0 : 1;
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

main(process.argv).then(
  (code) => process.exit(code),
  (err) => {
    console.error(`suite: ${(err as Error).message}`);
    process.exit(1);
  },
);
