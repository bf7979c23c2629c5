// Access control at the edge: who is asking (an API key, or a client IP), which limits apply, and
// whether this request still fits. Windows are fixed and aligned: minutes since the epoch and UTC
// days, so a window resets at the same instant for every edge location sharing the store.
//
// Order: key-required checks the coarse per-IP limit first (so a flood of bad keys is throttled too),
// then the key, then the key's limits. Open counts every request that carries a key against the
// keyed per-address ceiling first (as the CDN's WAF does, before any key is checked), then checks the
// key (an invalid key is refused, never downgraded to anonymous, and counted against the anonymous
// per-IP limit); a request without one is held to the anonymous per-IP limit. An address is counted
// as its client (client-key.ts: IPv6 per network).
import { clientBucket } from './client-key.js';
import { tierLimits, type AccessConfig, type Limits } from './config.js';
import { bearerToken, isLegacyId, keyId, keyMatches, SPELLING_DETAIL } from './key-format.js';
import type { EdgeKeyRecord, KeyRegistry } from './key-registry.js';
import type { QuotaStore } from './quota-store.js';
import { problem, type ProblemInit } from '../responses.js';

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

export interface AccessControlOptions {
  config: AccessConfig;
  store: QuotaStore;
  /** Null when no registry is configured: then no key is valid. */
  keys: KeyRegistry | null;
  secret: CryptoKey | null;
  now?: () => number;
}

const REALM = 'Bearer realm="isoatlas"';
const ANONYMOUS = 'from one IP address without an API key';
const NO_HEADERS: Record<string, string> = Object.freeze({}) as Record<string, string>;

export class AccessControl {
  private readonly now: () => number;

  constructor(private readonly options: AccessControlOptions) {
    this.now = options.now ?? Date.now;
  }

  get mode() {
    return this.options.config.mode;
  }

  /** Counts the request and says whether to serve it: the local server's handler asks this before
   * anything else. With `countRefused: false` (a front's admission, which passes a refused request
   * on to the server to be answered and counted there) a refusal leaves the counters as they were. */
  async decide(
    request: Request,
    clientIp: string | undefined,
    opts: { countRefused?: boolean; countedByFront?: boolean } = {},
  ): Promise<AccessDecision> {
    // An anonymous request in A that the nginx front counted itself (edge/server/front-count.ts): not
    // again here, and with the RateLimit fields the front gives its own answers.
    const { config } = this.options;
    if (opts.countedByFront && config.mode === 'open' && request.headers.get('authorization') === null)
      return { denied: null, headers: frontCountedFields(config.open.anonymous_per_ip, this.now()).headers };
    const charged: string[] = [];
    const decision = await this.judge(request, clientIp, charged);
    if (decision.denied && opts.countRefused === false)
      await Promise.all(charged.map((c) => this.options.store.undo(c)));
    return decision;
  }

  /** The decision; every counter charged on the way is added to `charged`. */
  private async judge(request: Request, clientIp: string | undefined, charged: string[]): Promise<AccessDecision> {
    const { config } = this.options;
    // Only the adapter's address counts: the peer's, or what a front the operator trusts forwarded.
    const ip = `ip:${clientBucket(clientIp ?? 'unknown', config.ipv6_prefix)}`;
    const authorization = request.headers.get('authorization');

    if (config.mode === 'key-required') {
      const perIp = await this.count(request, ip, config.key_required.per_ip, 'from one IP address', charged);
      if (perIp.denied) return perIp;
      if (authorization === null) return this.keyMissing(request);
    }
    if (authorization !== null) {
      if (config.mode === 'open') {
        const keyed = await this.count(
          request,
          `keyed-${ip}`,
          config.open.keyed_per_ip,
          'from one IP address with API keys',
          charged,
        );
        if (keyed.denied) return keyed;
      }
      const key = await this.authenticate(request, authorization);
      if (!(key instanceof Response))
        return this.count(
          request,
          `key:${key.id}`,
          tierLimits(config, key.tier),
          `for API key ${key.id} (tier ${key.tier})`,
          charged,
        );
      // Open: a refused key costs its address what an anonymous request does, so bad keys cannot be
      // tried without limit (key-required counted the address above).
      if (key.status === 401 && config.mode === 'open') {
        const anonymous = await this.count(
          request,
          ip,
          config.open.anonymous_per_ip,
          'from one IP address without a valid API key',
          charged,
        );
        if (anonymous.denied) return anonymous;
      }
      return { denied: key, headers: NO_HEADERS };
    }
    return this.count(request, ip, config.open.anonymous_per_ip, ANONYMOUS, charged);
  }

  private keyMissing(request: Request): AccessDecision {
    return this.unauthorized(request, 'this API requires an API key: send it as "Authorization: Bearer <key>"', false);
  }

  private unauthorized(request: Request, detail: string, invalidToken: boolean): AccessDecision {
    const challenge = invalidToken ? `${REALM}, error="invalid_token"` : REALM;
    return {
      denied: problem(request, { status: 401, detail, headers: { 'WWW-Authenticate': challenge } }),
      headers: NO_HEADERS,
    };
  }

  private async authenticate(
    request: Request,
    authorization: string,
  ): Promise<{ id: string; tier: string } | Response> {
    const invalid = (detail: string) => this.unauthorized(request, detail, true).denied!;
    const credentials = bearerToken(authorization);
    if ('problem' in credentials && credentials.problem === 'other-scheme') {
      // Another scheme (Basic, …) carries no Bearer credentials: the plain challenge (RFC 6750 §3).
      return this.unauthorized(
        request,
        'API keys are sent as "Authorization: Bearer <key>"; other schemes are not accepted',
        false,
      ).denied!;
    }
    if ('problem' in credentials) {
      // The same spellings as the CDN's gate, which admits one per key so WAF counts a key once.
      return problem(request, {
        status: 401,
        detail: SPELLING_DETAIL,
        headers: { 'WWW-Authenticate': `${REALM}, error="invalid_request"` },
      });
    }
    const presented = credentials.token;
    const id = keyId(presented);
    const { keys, secret } = this.options;
    if (!id || !keys || !secret) {
      // Spend the same HMAC work as a real check, so malformed keys are not told apart by timing.
      if (secret) await keyMatches(secret, presented, null);
      return invalid(
        'the API key is malformed or unknown; keys look like isoatlas_<id>_<secret> and are sent as "Authorization: Bearer <key>"',
      );
    }
    let record: EdgeKeyRecord | null;
    try {
      record = await keys.lookup(id);
    } catch {
      return problem(request, {
        status: 503,
        detail: 'API keys cannot be checked right now; try again shortly',
        headers: { 'Retry-After': '5' },
      });
    }
    const ok = await keyMatches(secret, presented, record?.hash ?? null);
    if (!ok || !record) return invalid('the API key is malformed or unknown');
    if (record.revoked_at) return invalid(`the API key ${id} was revoked on ${record.revoked_at}`);
    // As the CDN's gate: a lettered id must carry its record's tier's letter.
    if (!isLegacyId(id) && this.options.config.tier_letters[record.tier] !== id[0]) {
      return invalid(
        `the API key ${id} does not carry the letter of its tier (${record.tier}): it must be reissued; ask for a new key`,
      );
    }
    return { id, tier: record.tier };
  }

  /** Counts one request against every window of `limits` for `subject`, adding the counters it
   * charged to `charged` (none when it refuses). */
  private async count(
    request: Request,
    subject: string,
    limits: Limits,
    who: string,
    charged: string[],
  ): Promise<AccessDecision> {
    const windows = windowsAt(limits, subject, this.now());
    let closest: { window: CountedWindow; remaining: number } | null = null;
    for (let i = 0; i < windows.length; i++) {
      const w = windows[i];
      const result = await this.options.store.hit(w.counter, w.limit, w.end);
      if (!result.admitted) {
        await Promise.all(windows.slice(0, i).map((c) => this.options.store.undo(c.counter)));
        return refusal(request, w, limits, who);
      }
      // The RateLimit fields report the window with the fewest requests left, then the longest
      // until reset (the first of equals).
      const remaining = Math.max(0, w.limit - result.count);
      if (
        closest === null ||
        remaining < closest.remaining ||
        (remaining === closest.remaining && w.resetSeconds > closest.window.resetSeconds)
      ) {
        closest = { window: w, remaining };
      }
    }
    charged.push(...windows.map((w) => w.counter));
    return {
      denied: null,
      headers: closest === null ? NO_HEADERS : rateLimitHeaders(closest.window, closest.remaining, limits),
    };
  }
}

/** One window a request is counted in: its counter, its limit, when it ends. */
interface CountedWindow {
  counter: string;
  limit: number;
  end: number;
  resetSeconds: number;
  windowSeconds: number;
  noun: string;
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
    out.push({
      counter: `${subject}:${w.tag}:${index}`,
      limit,
      end,
      resetSeconds,
      windowSeconds: w.ms / 1000,
      noun: w.noun,
    });
  }
  return out;
}

/** The words of a 429 for a window that is used up; `reset`: its seconds left, as a number or as the
 * nginx variable that holds them. */
function refusalInit(w: Pick<CountedWindow, 'limit' | 'noun' | 'windowSeconds'>, who: string, reset: string) {
  return {
    status: 429,
    detail: `rate limit exceeded: ${w.limit} requests per ${w.noun} ${who}; retry in ${reset} s`,
    extra: { limit: { quota: w.limit, window_seconds: w.windowSeconds } },
  };
}

/** The 429 for a window that is used up. */
function refusal(request: Request, w: CountedWindow, limits: Limits, who: string): AccessDecision {
  const headers = rateLimitHeaders(w, 0, limits);
  const reset = String(w.resetSeconds);
  return {
    denied: problem(request, { ...refusalInit(w, who, reset), headers: { ...headers, 'Retry-After': reset } }),
    headers,
  };
}

/** IETF RateLimit headers (draft-ietf-httpapi-ratelimit-headers, field-per-value form) of the window
 * closest to exhaustion (`remaining` null: not known); the policy lists every window. */
function rateLimitHeaders(
  w: { limit: number; resetSeconds: number | string },
  remaining: number | null,
  limits: Limits,
): Record<string, string> {
  const policy = WINDOWS.filter((x) => limits[x.field] !== undefined)
    .map((x) => `${limits[x.field]};w=${x.ms / 1000}`)
    .join(', ');
  return {
    'ratelimit-limit': String(w.limit),
    ...(remaining === null ? {} : { 'ratelimit-remaining': String(remaining) }),
    'ratelimit-reset': String(w.resetSeconds),
    'ratelimit-policy': policy,
  };
}

/** What is said of an anonymous request in A that the nginx front counts itself, per address and
 * minute (edge/server/front-count.ts): the RateLimit fields of its minute without RateLimit-Remaining
 * (nginx cannot tell how many are left), and the 429 that refuses one over the limit, as the server
 * words it. `limits`: the anonymous limit, a per-minute one or none (no fields, no refusal); `reset`:
 * the seconds left in the minute, or the nginx variable that holds them. */
export function frontCountedFields(
  limits: Limits,
  now: number,
  reset?: string,
): { headers: Record<string, string>; refusal: (ProblemInit & { headers: Record<string, string> }) | null } {
  const [w] = windowsAt(limits, 'front', now);
  if (!w) return { headers: NO_HEADERS, refusal: null };
  const at = { limit: w.limit, resetSeconds: reset ?? w.resetSeconds };
  const headers = rateLimitHeaders(at, null, limits);
  const refused = { ...rateLimitHeaders(at, 0, limits), 'retry-after': String(at.resetSeconds) };
  return { headers, refusal: { ...refusalInit(w, ANONYMOUS, String(at.resetSeconds)), headers: refused } };
}
