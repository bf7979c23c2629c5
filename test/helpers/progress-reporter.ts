// Where a run is, beside vitest's own lines: after each file, how many of the run's files are done,
// the time since the start and the machine's load; at the end, the slowest files. A long run on a
// shared machine then shows its progress and where its time went.
import { availableParallelism, loadavg } from 'node:os';
import { relative } from 'node:path';
import type { Reporter, TestModule, TestSpecification } from 'vitest/node';

const SLOWEST = 10;

const clock = (ms: number) => {
  const s = Math.round(ms / 1000);
  return `${Math.floor(s / 60)}m${String(s % 60).padStart(2, '0')}s`;
};

export default class ProgressReporter implements Reporter {
  private start = Date.now();
  private total = 0;
  private readonly done: { file: string; ms: number; state: string }[] = [];

  onTestRunStart(specifications: ReadonlyArray<TestSpecification>) {
    this.start = Date.now();
    this.total = new Set(specifications.map((s) => s.moduleId)).size;
    this.write(`${this.total} test files; load ${loadavg()[0].toFixed(1)} on ${availableParallelism()} cores`);
  }

  onTestModuleEnd(module: TestModule) {
    const file = relative(process.cwd(), module.moduleId);
    this.done.push({ file, ms: module.diagnostic().duration, state: module.state() });
    this.write(
      `${this.done.length}/${this.total} files after ${clock(Date.now() - this.start)} (load ${loadavg()[0].toFixed(1)}): ${file} ${module.state()}`,
    );
  }

  onTestRunEnd() {
    if (this.done.length === 0) return;
    const slowest = [...this.done].sort((a, b) => b.ms - a.ms).slice(0, SLOWEST);
    const width = Math.max(...slowest.map((s) => s.file.length));
    this.write(
      [
        `slowest files (of ${this.done.length}, ${clock(Date.now() - this.start)} in all, load ${loadavg()[0].toFixed(1)} now):`,
        ...slowest.map((s) => `  ${s.file.padEnd(width)}  ${(s.ms / 1000).toFixed(1).padStart(6)} s`),
      ].join('\n'),
    );
  }

  private write(text: string) {
    process.stdout.write(`[progress] ${text}\n`);
  }
}
