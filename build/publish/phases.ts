// Where a publish's time goes, phase by phase, for `--log-level debug` and the summary (the
// benchmark prints them). The phases follow one another, except that objects and packs go up in one
// pass: each of those two is the span from its first PUT's start to its last PUT's end.
//   tree      reading the tree's manifest
//   history   the store's history and pointer, the manifests of its kept releases, their pack
//             lists, and a listing of the store when an earlier run of this tree may have left objects
//   hash      checking the tree and hashing what goes up (packs cut and hashed on the way)
//   probe     the check that the server honours conditional writes (and the KeyValueStore record)
//   manifest  the manifest's objects, and the release entered as pending
//   objects   the files the store lacks
//   packs     the packs
//   pointer   the release kept, and the pointer (and pin) moved to it
export const PHASES = ['tree', 'history', 'hash', 'probe', 'manifest', 'objects', 'packs', 'pointer'] as const;
export type Phase = (typeof PHASES)[number];

export interface PhaseTimes {
  /** Seconds of each phase (objects and packs: from the first PUT's start to the last one's end). */
  seconds: Partial<Record<Phase, number>>;
  /** Seconds from the start of the publish to the start of its first object or pack PUT. */
  firstUpload: number | null;
}

export class PhaseClock {
  readonly times: PhaseTimes = { seconds: {}, firstUpload: null };
  private readonly spans = new Map<Phase, { from: number; to: number; count: number }>();

  constructor(
    private readonly started: number,
    private readonly debug: (line: string) => void,
  ) {}

  /** Runs one phase and records its wall time. */
  async time<T>(phase: Phase, work: () => Promise<T>): Promise<T> {
    const from = performance.now();
    try {
      return await work();
    } finally {
      this.record(phase, performance.now() - from);
    }
  }

  /** Times one PUT of the objects or packs phase, which overlap (null: a PUT of another phase, which
   * counts for the first upload only). */
  async put<T>(phase: 'objects' | 'packs' | null, work: () => Promise<T>): Promise<T> {
    const from = performance.now();
    this.times.firstUpload ??= (from - this.started) / 1000;
    if (!phase) return work();
    let span = this.spans.get(phase);
    if (!span) {
      span = { from, to: from, count: 0 };
      this.spans.set(phase, span);
    }
    const result = await work();
    span.to = Math.max(span.to, performance.now());
    span.count++;
    return result;
  }

  /** Closes the overlapping phases (after the upload pass, and again after a recheck). */
  endUploads(): void {
    for (const [phase, span] of this.spans) {
      const seconds = (span.to - span.from) / 1000;
      this.times.seconds[phase] = seconds;
      this.debug(`publish phase ${phase}: ${span.count.toLocaleString('en-US')} PUTs over ${seconds.toFixed(2)} s`);
    }
    if (this.times.firstUpload !== null)
      this.debug(`publish: first object or pack PUT ${this.times.firstUpload.toFixed(2)} s after the start`);
  }

  private record(phase: Phase, ms: number): void {
    const seconds = (this.times.seconds[phase] ?? 0) + ms / 1000;
    this.times.seconds[phase] = seconds;
    this.debug(`publish phase ${phase}: ${(ms / 1000).toFixed(2)} s`);
  }
}
