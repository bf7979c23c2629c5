// Whether a sync's clean-up (gc's sweep, build/publish/sweep.ts) can collect anything. The sweep lists
// every object of the mirror and reads every held release's manifest, which costs a re-sync more than
// the change it fetches, so it runs only when it may delete something. Every object a finished sync
// wrote is listed by a release the mirror holds or has retired, so an object becomes collectable only
// (a) when a retired release's grace period ends, or (b) after a sync that did not finish (it may have
// written objects no release lists), or a clean-up that left some to collect later. A mark file in the
// mirror says that (b) is not so: a sync removes it before its first write and writes it again when it
// finishes with nothing left for a later clean-up. A mirror without the mark is swept.
import { existsSync, rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { POINTER_KEY, type ReleaseHistory } from '../contract/store-layout.js';

/** Hidden (a mirror's directory check skips dot names); its content is for a reader, not the code. */
export const SWEPT_MARK = '.swept';

export class CleanUpState {
  /** Whether the mirror was left with nothing to collect but what retirements will free. */
  private constructor(
    private readonly root: string,
    readonly wasSwept: boolean,
  ) {}

  /** Reads the mark and removes it: from here until the sync ends, it may write objects no release
   * lists. A new mirror (no pointer, no objects) has nothing to collect. */
  static begin(root: string): CleanUpState {
    const mark = join(root, SWEPT_MARK);
    const swept = existsSync(mark) || (!existsSync(join(root, POINTER_KEY)) && !existsSync(join(root, 'objects')));
    rmSync(mark, { force: true });
    return new CleanUpState(root, swept);
  }

  /** Whether the sweep may delete something now: the mark was missing, or a retired release's grace
   * period has ended. */
  due(history: ReleaseHistory, graceHours: number, now: Date): boolean {
    if (!this.wasSwept) return true;
    const cutoff = now.getTime() - graceHours * 3_600_000;
    return history.retired.some((r) => Date.parse(r.retired_at) < cutoff);
  }

  /** The sync finished, and nothing is left to collect but what retirements will free. */
  done(): void {
    writeFileSync(
      join(this.root, SWEPT_MARK),
      'isoatlas mirror: the last sync finished and left no object to collect but those of retired releases\n',
    );
  }
}
