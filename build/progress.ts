// A progress bar for long steps, drawn only on an interactive terminal so logs and CI stay clean.
import cliProgress from 'cli-progress';

export interface Progress {
  tick(n?: number): void;
  stop(): void;
}

export function startProgress(label: string, total: number, stream: NodeJS.WriteStream = process.stderr): Progress {
  if (!stream.isTTY || total === 0) return { tick() {}, stop() {} };
  const bar = new cliProgress.SingleBar(
    { format: `${label.padEnd(14)} [{bar}] {percentage}% {value}/{total}`, stream, hideCursor: true, clearOnComplete: false },
    cliProgress.Presets.shades_classic,
  );
  bar.start(total, 0);
  return {
    tick: (n = 1) => bar.increment(n),
    stop: () => bar.stop(),
  };
}
