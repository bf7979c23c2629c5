// A published atlas behind any raw reader (S3, HTTP): reads the release pointer (cached for at most
// `pointerTtlMs`, so a publish or rollback reaches every edge instance within that time) and serves
// each request from the one release it pinned.
import { POINTER_KEY, parsePointer, type ReleasePointer } from '../contract/bucket.js';
import { OriginError, type Origin, type PinnedRelease, type VersionedOrigin } from '../origin.js';

class PrefixedOrigin implements Origin {
  readonly description: string;
  constructor(
    private readonly raw: Origin,
    private readonly prefix: string,
  ) {
    this.description = `${raw.description}${prefix}`;
  }
  read(path: string) {
    return this.raw.read(this.prefix + path);
  }
}

export class PointerOrigin implements VersionedOrigin {
  readonly description: string;
  private cached: { pointer: ReleasePointer; until: number; pinned: PinnedRelease } | null = null;
  private loading: Promise<PinnedRelease> | null = null;

  constructor(
    private readonly raw: Origin,
    private readonly pointerTtlMs = 10_000,
    private readonly now: () => number = Date.now,
  ) {
    this.description = `${raw.description} (release from ${POINTER_KEY})`;
  }

  async pin(): Promise<PinnedRelease> {
    if (this.cached && this.cached.until > this.now()) return this.cached.pinned;
    return (this.loading ??= this.load()
      .catch((err) => {
        // The pointer is one object the whole API hangs on: when re-reading it fails (the store
        // hiccups, a non-atomic store is mid-write), keep serving the release already pinned and
        // try again in a second, rather than failing every request.
        if (!this.cached) throw err;
        this.cached.until = this.now() + 1_000;
        return this.cached.pinned;
      })
      .finally(() => (this.loading = null)));
  }

  private async load(): Promise<PinnedRelease> {
    const file = await this.raw.read(POINTER_KEY);
    if (!file) throw new OriginError(`${this.raw.description} has no ${POINTER_KEY}: nothing has been published there`, 'unavailable');
    let pointer: ReleasePointer;
    try {
      pointer = parsePointer(new TextDecoder().decode(file.body));
    } catch (err) {
      throw new OriginError(`${this.raw.description}${POINTER_KEY}: ${(err as Error).message}`, 'unavailable');
    }
    const same = this.cached?.pointer.release === pointer.release && this.cached.pointer.prefix === pointer.prefix;
    const pinned: PinnedRelease = same
      ? this.cached!.pinned
      : { release: pointer.release, origin: new PrefixedOrigin(this.raw, pointer.prefix), publicPath: (path) => pointer.prefix + path };
    this.cached = { pointer, until: this.now() + this.pointerTtlMs, pinned };
    return pinned;
  }
}
