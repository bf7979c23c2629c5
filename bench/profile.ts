// Summarizes a V8 CPU profile (node --cpu-prof): the functions with the most self time, as a share of
// the time the process was not idle — what dominates a request.
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

interface ProfileNode {
  id: number;
  callFrame: { functionName: string; url: string; lineNumber: number };
}
interface CpuProfile {
  nodes: ProfileNode[];
  samples: number[];
  timeDeltas: number[];
  startTime: number;
}

export interface Hotspot {
  frame: string;
  percent: number;
}

function frameName(n: ProfileNode): string {
  const file = n.callFrame.url.replace(/^file:\/\//, '').split('/').slice(-2).join('/');
  return `${n.callFrame.functionName || '(anonymous)'}${file ? ` (${file})` : ''}`;
}

/** Monotonic microseconds, the clock V8 stamps profile samples with (CLOCK_MONOTONIC on Linux). */
export const monotonicMicros = () => Number(process.hrtime.bigint() / 1000n);

/** Self time per function; with `window` (monotonic µs), only samples taken inside it, so the
 * server's start-up (module loading, compiling) does not count. */
export function hotspots(profileFile: string, top = 10, window?: { from: number; to: number }): Hotspot[] {
  const p = JSON.parse(readFileSync(profileFile, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const self = new Map<string, number>();
  let busy = 0;
  let at = p.startTime;
  p.samples.forEach((id, i) => {
    const node = byId.get(id)!;
    const dt = p.timeDeltas[i] ?? 0;
    at += dt;
    if (window && (at < window.from || at > window.to)) return;
    if (node.callFrame.functionName === '(idle)') return;
    busy += dt;
    const name = frameName(node);
    self.set(name, (self.get(name) ?? 0) + dt);
  });
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, top)
    .map(([frame, t]) => ({ frame, percent: (100 * t) / busy }));
}

/** The largest profile in a directory: the main thread's (tsx's loader thread writes a small one too). */
export function mainProfile(dir: string): string | null {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile'));
  if (!files.length) return null;
  return join(dir, files.sort((a, b) => readFileSync(join(dir, b)).length - readFileSync(join(dir, a)).length)[0]);
}
