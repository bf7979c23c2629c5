// What the nginx front (edge/server/nginx-config.ts) counts itself, and what of the server's answers it
// may keep. In arrangement A an anonymous request is counted by nginx, per client address and minute
// at the server's anonymous limit, so that a file is answered without asking the server; the server,
// told so by a front it trusts, does not count it again (edge/access/control.ts), and the file it
// names for such a request, the same for every anonymous client, may be kept by the front. Keyed
// requests, and every request in B, are the server's to count, one admission each.
// Chosen over one admission per request (answers identical to the last header, but a front no faster
// than the server) and over a count shared by nginx and the server (stock nginx keeps no counter the
// server can read or write): the same count in the same fixed minutes, at the price of
// RateLimit-Remaining, which nginx cannot know (docs/OPERATIONS.md lists every difference).
import type { AccessConfig } from '../access/config.js';
import { redactKeys } from '../access/redaction.js';

/** Set by the front on a request it counted itself: the limit it counted it against (frontCountingValue). */
export const FRONT_COUNTED_HEADER = 'X-Isoatlas-Front-Counted';
/** Set by the front on such a request: its view of the served release (the ETag nginx gives the
 * mirror's pointer or the tree's manifest), the first part of what it keeps an answer under. */
export const FRONT_STATE_HEADER = 'X-Isoatlas-Front-State';
/** How long the front may keep what the server lets it keep, in seconds (nginx: X-Accel-Expires); it
 * is kept under the release's state, so a new release is never answered from it. */
export const FRONT_KEEP_SECONDS = 600;

/** The anonymous limit the front counts (`perMinute` null: there is none, nothing to count), or null
 * when the server counts every request itself: key-required (B), or an anonymous day limit, which
 * nginx cannot count exactly. */
export function frontCounting(access: AccessConfig): { perMinute: number | null; ipv6Prefix: number } | null {
  if (access.mode !== 'open') return null;
  const { per_minute, per_day } = access.open.anonymous_per_ip;
  if (per_day !== undefined) return null;
  return { perMinute: per_minute ?? null, ipv6Prefix: access.ipv6_prefix };
}

/** What FRONT_COUNTED_HEADER says: how the front counted. The server believes it only when it is what
 * the server itself would count (the same limit, IPv6 clients by the same network). */
export const frontCountingValue = (c: { perMinute: number | null; ipv6Prefix: number }) =>
  `${c.perMinute === null ? 'unlimited' : `${c.perMinute}/min`}; ipv6=/${c.ipv6Prefix}`;

/** Whether the front may keep what is answered to a request with this target (or Accept-Encoding):
 * only text the server's own log would write as it is (nginx writes the key of what it keeps into
 * the cache file, in clear). */
export const keepableTarget = (target: string) => redactKeys(target) === target;

/** Which views of the served release the server has had time to catch up with. The server re-reads
 * the release every `recheckMs`: an answer given under a view the front has only just seen may have
 * come from the release before it, so the front keeps answers under a view only once the server has
 * known it for two such periods (a re-read already under way when the view changed has ended). */
export class FrontViews {
  private readonly firstSeen = new Map<string, number>();

  constructor(
    private readonly recheckMs: number,
    private readonly now: () => number = Date.now,
  ) {}

  /** May an answer given now under `state` be kept? */
  settled(state: string | null): boolean {
    if (!state) return false;
    const now = this.now();
    const seen = this.firstSeen.get(state);
    if (seen !== undefined) return now - seen > 2 * this.recheckMs;
    this.firstSeen.set(state, now);
    // A few views at most are current at once (the old one's requests still in flight): a view
    // forgotten is only seen anew.
    if (this.firstSeen.size > 16) this.firstSeen.delete(this.firstSeen.keys().next().value as string);
    return false;
  }
}
