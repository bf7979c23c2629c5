// What every section gets: the options, a scratch directory, progress logging and the demo release
// (built once per bench run, or taken from --tree / the build section).
import { execFile } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import { join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';

export const ROOT = resolve(fileURLToPath(new URL('..', import.meta.url)));
export const CLI = join(ROOT, 'bin/isoatlas.mjs');

export interface BenchOptions {
  runs: number;
  runsHuman: number;
  /** Pairs of publish runs against s3rver (publish first, then rclone first), each run on new buckets. */
  publishPairs: number;
  /** The release the publish section uploads: the demo, or the human-scale tree (build section or --human-tree). */
  publishScale: 'demo' | 'human' | 'demo+human';
  quick: boolean;
  soakMinutes: number;
  skipHuman: boolean;
  /** Work directory of the human-scale build (kept); default a scratch directory. */
  humanTree?: string;
  /** Genes of the smaller release of the scale section (the larger has four times as many). */
  scaleGenes: number;
  /** An already built demo work directory (release.sqlite, tree/) to use instead of building one. */
  demoWork?: string;
}

export interface DemoRelease {
  work: string;
  db: string;
  tree: string;
}

export interface BenchContext {
  opts: BenchOptions;
  tmp: string;
  log: (line: string) => void;
  demo(): Promise<DemoRelease>;
  /** Lets the build section hand over the demo release it built. */
  provideDemo(demo: DemoRelease): void;
  /** The human-scale release: built by the build section in this run, or an existing tree in
   * --human-tree; null when there is none (e.g. --skip-human without --human-tree). */
  human(): { work: string; tree: string } | null;
  provideHuman(human: { work: string; tree: string }): void;
}

export function demoRelease(work: string): DemoRelease {
  return { work, db: join(work, 'release.sqlite'), tree: join(work, 'tree') };
}

/** Runs a command to completion (arguments passed as they are, no shell); rejects with its output
 * when it fails. */
export function run(
  cmd: string,
  args: string[],
  opts: { cwd?: string; env?: NodeJS.ProcessEnv } = {},
): Promise<{ stdout: string; stderr: string }> {
  return new Promise((resolvePromise, reject) => {
    const child = execFile(
      cmd,
      args,
      { cwd: opts.cwd ?? ROOT, env: { ...process.env, ...opts.env }, maxBuffer: RUN_MAX_OUTPUT },
      (err, stdout, stderr) => {
        if (!err) return resolvePromise({ stdout, stderr });
        const status = typeof err.code === 'number' ? err.code : (err.signal ?? err.code);
        reject(
          new Error(`${cmd} ${args.join(' ')} failed (${status}):\n${String(stderr || err.message).slice(-2000)}`),
        );
      },
    );
    child.stdin?.end(); // nothing to read: a command that waits for input ends instead of hanging
  });
}

/** What run keeps of a command's stdout or stderr; past it the command is stopped and fails. */
const RUN_MAX_OUTPUT = 256 * 1024 * 1024;

const RSS_PRELOAD = join(ROOT, 'bench/max-rss.cjs');

export interface MeasuredRun {
  seconds: number;
  peakRssBytes: number;
  stdout: string;
  stderr: string;
}

/** Runs the CLI in a child process and measures its wall time and peak RSS (getrusage, via a preload). */
export async function measureCli(args: string[], tmp: string, tag: string): Promise<MeasuredRun> {
  const rssFile = join(tmp, `rss-${tag}.json`);
  const started = performance.now();
  const out = await run(process.execPath, ['--require', RSS_PRELOAD, CLI, ...args], {
    env: { ISOATLAS_BENCH_RSS_FILE: rssFile },
  });
  const seconds = (performance.now() - started) / 1000;
  const { maxRssKiB } = JSON.parse(readFileSync(rssFile, 'utf8')) as { maxRssKiB: number };
  return { seconds, peakRssBytes: maxRssKiB * 1024, ...out };
}

export function createContext(opts: BenchOptions, tmp: string, log: (line: string) => void): BenchContext {
  let demo: Promise<DemoRelease> | null = opts.demoWork ? Promise.resolve(demoRelease(resolve(opts.demoWork))) : null;
  let human: { work: string; tree: string } | null =
    opts.humanTree && existsSync(join(opts.humanTree, 'tree/manifest.json'))
      ? { work: resolve(opts.humanTree), tree: join(resolve(opts.humanTree), 'tree') }
      : null;
  return {
    opts,
    tmp,
    log,
    human: () => human,
    provideHuman(h) {
      human = h;
      // Sections that look for the human tree through the option find this one too.
      opts.humanTree ??= h.work;
    },
    provideDemo(d) {
      if (!demo) demo = Promise.resolve(d);
    },
    demo() {
      if (!demo) {
        const work = join(tmp, 'demo');
        log('building the demo release for the benchmarks (isoatlas demo)…');
        demo = run(process.execPath, [CLI, 'demo', '--work', work]).then(() => demoRelease(work));
      }
      return demo.then((d) => {
        if (!existsSync(join(d.tree, 'manifest.json'))) throw new Error(`${d.tree} is not a built tree`);
        return d;
      });
    },
  };
}
