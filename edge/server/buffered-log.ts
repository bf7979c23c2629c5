// Log lines written in batches. Node writes stdout synchronously when it is a file or a pipe: one
// write syscall per request under load. Lines are held for at most `intervalMs` (or until
// `maxBytes` are pending) and written together; flush() writes what is pending at once.
export interface BufferedLog {
  /** Queues one line (without its newline). */
  line(text: string): void;
  /** Writes every pending line now. */
  flush(): void;
}

export function bufferedLog(write: (text: string) => void, opts: { intervalMs?: number; maxBytes?: number } = {}): BufferedLog {
  const intervalMs = opts.intervalMs ?? 20;
  const maxBytes = opts.maxBytes ?? 64 * 1024;
  let pending = '';
  let timer: ReturnType<typeof setTimeout> | null = null;
  const flush = () => {
    if (timer) clearTimeout(timer);
    timer = null;
    if (pending === '') return;
    const text = pending;
    pending = '';
    write(text);
  };
  return {
    line(text) {
      pending += `${text}\n`;
      if (pending.length >= maxBytes) flush();
      else if (!timer) {
        timer = setTimeout(flush, intervalMs);
        timer.unref(); // a pending line never keeps the process alive; exit flushes it
      }
    },
    flush,
  };
}
