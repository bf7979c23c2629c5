// Whether the process that left a scratch file behind still runs: a run removes the scratch of a
// killed one, never that of one still running beside it.

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (err) {
    // EPERM: it runs, as another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM';
  }
}
