// A test file's nginx fronts (nginx-front.ts), stopped after its tests. Kept out of nginx-front.ts,
// which imports nothing of vitest's, so that a process outside vitest can start a front
// (netns-firewall.ts).
import { afterAll } from 'vitest';
import { rmSync } from 'node:fs';
import { startNginxFront, type RunningFront } from './nginx-front.js';

/** A test file's fronts and temporary directories: `front` starts one, `temp` takes a directory, and
 * after the file's tests every front is stopped and every directory removed. */
export function frontsOfSuite(): {
  front: (args: Parameters<typeof startNginxFront>[0]) => Promise<RunningFront>;
  temp: string[];
} {
  const fronts: RunningFront[] = [];
  const temp: string[] = [];
  afterAll(async () => {
    for (const f of fronts) await f.stop();
    for (const dir of temp) rmSync(dir, { recursive: true, force: true });
  });
  return {
    temp,
    async front(args) {
      const f = await startNginxFront(args);
      fronts.push(f);
      return f;
    },
  };
}
