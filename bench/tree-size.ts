// Files and bytes of a rendered tree, counted on disk (not taken from the build's own summary).
import fg from 'fast-glob';

export async function treeSize(dir: string): Promise<{ files: number; bytes: number }> {
  let files = 0;
  let bytes = 0;
  for await (const entry of fg.stream('**/*', { cwd: dir, onlyFiles: true, stats: true, dot: true }) as AsyncIterable<{
    stats: { size: number };
  }>) {
    files += 1;
    bytes += entry.stats.size;
  }
  return { files, bytes };
}
