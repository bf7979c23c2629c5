// Progress of long steps. On an interactive terminal, a bar with counts and the time left; otherwise
// (logs, CI, a service) a log line at least every PROGRESS_LINE_MS with counts, rate and time left,
// so a long publish is never silent. Commands end with their own one-line summary either way.
import cliProgress from 'cli-progress';
import { log } from '../../edge/server/logger.js';
import type { LogLine } from '../../edge/handler-log.js';

export interface Progress {
  tick(n?: number): void;
  stop(): void;
  /** On a terminal only: words shown after the bar until replaced (null clears them), e.g. why it
   * stands still. Off a terminal the caller logs them as a line. */
  note?(text: string | null): void;
}

/** How often a non-terminal gets a progress line. */
export const PROGRESS_LINE_MS = 10_000;

const fmt = (n: number) => Math.round(n).toLocaleString('en-US');

/** "about 3 min left" from the rate so far; null before there is a rate. */
export function timeLeft(done: number, total: number, elapsedMs: number): string | null {
  if (done <= 0 || elapsedMs <= 0) return null;
  const seconds = ((total - done) / done) * (elapsedMs / 1000);
  if (seconds < 90) return `about ${Math.max(1, Math.round(seconds))} s left`;
  if (seconds < 5400) return `about ${Math.round(seconds / 60)} min left`;
  return `about ${(seconds / 3600).toFixed(1)} h left`;
}

export function startProgress(
  label: string,
  total: number,
  stream: NodeJS.WritableStream & { isTTY?: boolean } = process.stderr,
  opts: { lineEveryMs?: number; log?: LogLine } = {},
): Progress {
  if (total === 0) return { tick() {}, stop() {} };
  if (stream.isTTY) {
    const bar = new cliProgress.SingleBar(
      {
        format: `${label.padEnd(14)} [{bar}] {percentage}% {value}/{total} | {eta_formatted} left{note}`,
        stream: stream as NodeJS.WriteStream,
        hideCursor: true,
        clearOnComplete: false,
        etaBuffer: 200,
      },
      cliProgress.Presets.shades_classic,
    );
    bar.start(total, 0, { note: '' });
    return {
      tick: (n = 1) => bar.increment(n),
      stop: () => bar.stop(),
      note: (text) => bar.update({ note: text ? ` | ${text}` : '' }),
    };
  }
  // Off a terminal the bar's stream is not used: the lines go through the logger.
  const write = opts.log ?? log.info;
  const started = performance.now();
  let done = 0;
  const line = () => {
    const elapsed = performance.now() - started;
    const rate = done / (elapsed / 1000);
    const left = timeLeft(done, total, elapsed);
    write(
      { event: 'progress', step: label, done, total, per_second: Math.round(rate), ...(left ? { left } : {}) },
      `${label}: ${fmt(done)}/${fmt(total)} (${((done / total) * 100).toFixed(1)}%), ${fmt(rate)}/s${left ? `, ${left}` : ''}`,
    );
  };
  const timer = setInterval(line, opts.lineEveryMs ?? PROGRESS_LINE_MS);
  timer.unref();
  return {
    tick: (n = 1) => {
      done += n;
    },
    stop: () => clearInterval(timer),
  };
}
