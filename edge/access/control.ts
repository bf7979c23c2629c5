// Access control at the edge: who is asking (an API key, or a client IP), which limits apply, and
// whether this request still fits. Windows are fixed and aligned: minutes since the epoch and UTC
// days, so a window resets at the same instant for every edge location sharing the store.
//
// Order: key-required checks the coarse per-IP limit first (so a flood of bad keys is throttled too),
// then the key, then the key's limits. Open checks a key if one is sent (an invalid key is refused,
// never downgraded to anonymous) and otherwise the anonymous per-IP limit.
import { tierLimits, type AccessConfig, type Limits } from './config.js';
import { keyId, keyMatches } from './key-format.js';
import type { KeyRegistry } from './key-registry.js';
import type { QuotaStore } from './quota-store.js';
import { EdgeResponse, NO_FIELDS, problem, toWebResponse } from '../responses.js';
import type { EdgeRequest } from '../request.js';

const WINDOWS = [
  { field: 'per_minute', tag: 'm', ms: 60_000, noun: 'minute' },
  { field: 'per_day', tag: 'd', ms: 86_400_000, noun: 'day' },
] as const;

export interface AccessDecision {
  /** The response to send instead of serving the request (401, 429, 503), or null to serve it. */
  denied: Response | null;
  /** RateLimit-* headers (lower-case names) to add to whatever response is sent. */
  headers: Record<string, string>;
}

/** The decision as the edge handler uses it: the RateLimit fields as a [name, value, …] list that an
 * answer takes as it is (no object to walk per request). */
export interface EdgeDecision {
  denied: EdgeResponse | null;
  fields: readonly string[];
}

export interface AccessControlOptions {
  config: AccessConfig;
  store: QuotaStore;
  /** Null when no registry is configured: then no key is valid. */
  keys: KeyRegistry | null;
  secret: CryptoKey | null;
  now?: () => number;
}

/** A window as it stands this second (made once a second per subject, see windowsOf), with the
 * RateLimit values that change no faster already written. */
interface WindowState {
  limit: number;
  resetSeconds: number;
  windowSeconds: number;
  limitText: string;
  resetText: string;
}

const REALM = 'Bearer realm="isoatlas"';
/** Subjects whose windows are kept for the current second (see windowsOf); beyond it, all are dropped. */
const RECENT_SUBJECTS = 4096;

export class AccessControl {
  private readonly now: () => number;
  private readonly recentWindows = new Map<string, { second: number; limits: Limits; windows: CountedWindow[] }>();
  private readonly ipSubjects = new Map<string, string>();

  constructor(private readonly options: AccessControlOptions) {
    this.now = options.now ?? Date.now;
  }

  get mode() {
    return this.options.config.mode;
  }

  /** The decision with a Web Response to send when denied (the viewer-request adapter). */
  async check(request: EdgeRequest, clientIp: string | undefined): Promise<AccessDecision> {
    const decision = await this.decide(request, clientIp);
    return { denied: decision.denied && toWebResponse(decision.denied), headers: recordOf(decision.fields) };
  }

  /** The decision as the edge handler uses it. */
  async decide(request: EdgeRequest, clientIp: string | undefined): Promise<EdgeDecision> {
    const { config } = this.options;
    // Only the adapter's trusted source of the client address counts; X-Forwarded-For is never read.
    const ip = clientIp ?? 'unknown';
    const authorization = request.headers.get('authorization');

    if (config.mode === 'key-required') {
      const perIp = await this.count(request, this.ipSubject(ip), config.key_required.per_ip, 'from one IP address');
      if (perIp.denied) return perIp;
      if (authorization === null) return this.keyMissing(request);
    }
    if (authorization !== null) {
      const key = await this.authenticate(request, authorization);
      if (key instanceof EdgeResponse) return { denied: key, fields: NO_FIELDS };
      return this.count(request, `key:${key.id}`, tierLimits(config, key.tier), `for API key ${key.id} (tier ${key.tier})`);
    }
    return this.count(request, this.ipSubject(ip), config.open.anonymous_per_ip, 'from one IP address without an API key');
  }

  /** The same decision made at once, or undefined (having counted nothing) when it needs waiting
   * for: a key to check, or a shared store to count in. */
  decideNow(request: EdgeRequest, clientIp: string | undefined): EdgeDecision | undefined {
    const { config, store } = this.options;
    if (store.hitNow === undefined || request.headers.get('authorization') !== null) return undefined;
    const ip = clientIp ?? 'unknown';
    if (config.mode === 'key-required') {
      const perIp = this.countNow(request, this.ipSubject(ip), config.key_required.per_ip, 'from one IP address');
      return perIp.denied ? perIp : this.keyMissing(request);
    }
    return this.countNow(request, this.ipSubject(ip), config.open.anonymous_per_ip, 'from one IP address without an API key');
  }

  /** `ip:<address>`, made once per address while it is recent: an address string is the same object
   * on every request of a connection, so finding its subject costs no hashing of a new string. */
  private ipSubject(ip: string): string {
    let subject = this.ipSubjects.get(ip);
    if (subject === undefined) {
      if (this.ipSubjects.size >= RECENT_SUBJECTS) this.ipSubjects.clear();
      subject = `ip:${ip}`;
      this.ipSubjects.set(ip, subject);
    }
    return subject;
  }

  private keyMissing(request: EdgeRequest): EdgeDecision {
    return this.unauthorized(request, 'this API requires an API key: send it as "Authorization: Bearer <key>"', false);
  }

  private unauthorized(request: EdgeRequest, detail: string, invalidToken: boolean): EdgeDecision {
    const challenge = invalidToken ? `${REALM}, error="invalid_token"` : REALM;
    return { denied: problem(request, { status: 401, detail, headers: { 'WWW-Authenticate': challenge } }), fields: NO_FIELDS };
  }

  private async authenticate(request: EdgeRequest, authorization: string): Promise<{ id: string; tier: string } | EdgeResponse> {
    const invalid = (detail: string) => this.unauthorized(request, detail, true).denied!;
    if (!/^Bearer(\s|$)/i.test(authorization)) {
      // Another scheme (Basic, …) carries no Bearer credentials: the plain challenge (RFC 6750 §3).
      return this.unauthorized(request, 'API keys are sent as "Authorization: Bearer <key>"; other schemes are not accepted', false).denied!;
    }
    const match = /^Bearer[ ]+([^\s]+)[ ]*$/i.exec(authorization);
    const presented = match?.[1] ?? '';
    const id = keyId(presented);
    const { keys, secret } = this.options;
    if (!id || !match || !keys || !secret) {
      // Spend the same HMAC work as a real check, so malformed keys are not told apart by timing.
      if (secret) await keyMatches(secret, presented, null);
      return invalid('the API key is malformed or unknown; keys look like isoatlas_<id>_<secret> and are sent as "Authorization: Bearer <key>"');
    }
    let record;
    try {
      record = await keys.lookup(id);
    } catch {
      return problem(request, { status: 503, detail: 'API keys cannot be checked right now; try again shortly', headers: { 'Retry-After': '5' } });
    }
    const ok = await keyMatches(secret, presented, record?.hash ?? null);
    if (!ok || !record) return invalid('the API key is malformed or unknown');
    if (record.revoked_at) return invalid(`the API key ${id} was revoked on ${record.revoked_at}`);
    return { id, tier: record.tier };
  }

  /** Counts one request against every window of `limits` for `subject`. */
  private async count(request: EdgeRequest, subject: string, limits: Limits, who: string): Promise<EdgeDecision> {
    const windows = this.windowsOf(subject, limits);
    const closest = new ClosestWindow();
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i];
      const result = await this.options.store.hit(w.counter, w.state.limit, w.end);
      if (!result.admitted) {
        await Promise.all(windows.slice(0, i).map((c) => this.options.store.undo(c.counter)));
        return refusal(request, w, limits, who);
      }
      closest.counted(w.state, result.count);
    }
    return { denied: null, fields: closest.fields(limits) };
  }

  /** The windows `subject` is counted in now. Their counters and resets change at most once a second
   * (windows end on whole seconds), so they are made once a second per subject, not per request. */
  private windowsOf(subject: string, limits: Limits): CountedWindow[] {
    const now = this.now();
    const second = Math.floor(now / 1000);
    const known = this.recentWindows.get(subject);
    if (known !== undefined && known.second === second && known.limits === limits) return known.windows;
    if (this.recentWindows.size >= RECENT_SUBJECTS) this.recentWindows.clear();
    const windows = windowsAt(limits, subject, now);
    this.recentWindows.set(subject, { second, limits, windows });
    return windows;
  }

  /** count() on a store that counts at once (hitNow). */
  private countNow(request: EdgeRequest, subject: string, limits: Limits, who: string): EdgeDecision {
    const windows = this.windowsOf(subject, limits);
    const closest = new ClosestWindow();
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i];
      const result = this.options.store.hitNow!(w.counter, w.state.limit, w.end);
      if (!result.admitted) {
        for (const c of windows.slice(0, i)) void this.options.store.undo(c.counter);
        return refusal(request, w, limits, who);
      }
      closest.counted(w.state, result.count);
    }
    return { denied: null, fields: closest.fields(limits) };
  }
}

/** One window a request is counted in: its counter, when it ends, and its state before the count. */
interface CountedWindow {
  counter: string;
  end: number;
  noun: string;
  state: WindowState;
}

/** The windows of `limits` that `subject` is counted in at `now`. */
function windowsAt(limits: Limits, subject: string, now: number): CountedWindow[] {
  const out: CountedWindow[] = [];
  for (const w of WINDOWS) {
    const limit = limits[w.field];
    if (limit === undefined) continue;
    const index = Math.floor(now / w.ms);
    const end = (index + 1) * w.ms;
    const resetSeconds = Math.max(1, Math.ceil((end - now) / 1000));
    const state = { limit, resetSeconds, windowSeconds: w.ms / 1000, limitText: String(limit), resetText: String(resetSeconds) };
    out.push({ counter: `${subject}:${w.tag}:${index}`, end, noun: w.noun, state });
  }
  return out;
}

/** Of the windows a request was counted in, the one its RateLimit fields report: the fewest requests
 * remaining, then the longest until reset (the first of equals). */
class ClosestWindow {
  private state: WindowState | null = null;
  private remaining = 0;

  counted(state: WindowState, count: number): void {
    const remaining = Math.max(0, state.limit - count);
    if (this.state !== null && (this.remaining < remaining || (this.remaining === remaining && this.state.resetSeconds >= state.resetSeconds))) return;
    this.state = state;
    this.remaining = remaining;
  }

  fields(limits: Limits): readonly string[] {
    return this.state === null ? NO_FIELDS : rateLimitFields(this.state, this.remaining, limits);
  }
}

/** The 429 for a window that is used up. */
function refusal(request: EdgeRequest, w: CountedWindow, limits: Limits, who: string): EdgeDecision {
  const { limit, resetSeconds, windowSeconds } = w.state;
  const fields = rateLimitFields(w.state, 0, limits);
  return {
    denied: problem(request, {
      status: 429,
      detail: `rate limit exceeded: ${limit} requests per ${w.noun} ${who}; retry in ${resetSeconds} s`,
      extra: { limit: { quota: limit, window_seconds: windowSeconds } },
      headers: { ...recordOf(fields), 'Retry-After': String(resetSeconds) },
    }),
    fields,
  };
}

/** IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers, field-per-value form) as a
 * [name, value, …] list: of the window closest to exhaustion; the policy lists every window. Only the
 * remaining count is made per request: the rest changes at most once a second (windowsAt). */
function rateLimitFields(state: WindowState, remaining: number, limits: Limits): readonly string[] {
  return ['ratelimit-limit', state.limitText, 'ratelimit-remaining', String(remaining), 'ratelimit-reset', state.resetText, 'ratelimit-policy', policyOf(limits)];
}

function recordOf(fields: readonly string[]): Record<string, string> {
  const record: Record<string, string> = {};
  for (let i = 0; i < fields.length; i += 2) record[fields[i]] = fields[i + 1];
  return record;
}

/** The policy header of a set of limits: the same for every request under them, so made once. */
const policies = new WeakMap<Limits, string>();
function policyOf(limits: Limits): string {
  let policy = policies.get(limits);
  if (policy === undefined) {
    policy = WINDOWS.filter((w) => limits[w.field] !== undefined)
      .map((w) => `${limits[w.field]};w=${w.ms / 1000}`)
      .join(', ');
    policies.set(limits, policy);
  }
  return policy;
}
