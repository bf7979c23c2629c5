// isoatlas viewer gate: a CloudFront Function (runtime cloudfront-js-2.0) on the viewer request of
// every cache behaviour. Its jobs, all in process with no network call, the last two reading the CloudFront
// KeyValueStore:
//   - preflights (OPTIONS): answered 204 with the contract's CORS headers, no key needed;
//   - the release: an API request that names none gets `default_release=<current>` (the store's
//     `release:current`, written by `isoatlas publish --kvs`), so the release is part of every cached
//     answer's key and a publish or rollback switches readers at once, with no invalidation. Not
//     `release`: links carry only a release the viewer named, so the answer is the one a server
//     without this gate gives the same request;
//   - keys (arrangements open and key-required): `Authorization: Bearer <key>` is checked against
//     the store written by `isoatlas keys publish`: the key's HMAC (keyed by the secret kept in the
//     store) is compared in constant time with the stored one. Missing keys pass only in the open
//     arrangement; malformed, unknown, forged or revoked keys are refused, never downgraded to
//     anonymous. A key whose day quota the meter found used up is refused with 429 until the time
//     the store names. Per-minute limits are WAF rules, which run before this.
//
// The source is deployed as is, after edge/cloudfront/key-gate.ts replaces __SETTINGS__; the tests run this
// file in a harness that provides the `cloudfront` module. Keep it within what the runtime supports
// (ES 5.1 plus a few later features, no spread, no optional chaining, no classes) and under 10 KB.
import cf from 'cloudfront';
import crypto from 'crypto';

var SETTINGS = __SETTINGS__;
var kvs = cf.kvs();
var KEY = /^isoatlas_([a-z2-7]{8,9})_[A-Za-z0-9_-]{43}$/;
// One spelling per key (scheme in any case, one space, the key): WAF counts the header lowercased.
var BEARER = /^Bearer (\S+)$/i;
var DUMMY_HASH = '0000000000000000000000000000000000000000000000000000000000000000';
var REALM = 'Bearer realm="isoatlas"';
var TITLES = { 401: 'Unauthorized', 429: 'Too Many Requests', 503: 'Service Unavailable' };

async function handler(event) {
  var request = event.request;
  // Preflights carry no key (browsers never send one with them): answered here in every mode, so
  // none is refused for want of a key and none reaches the origin (OPTIONS is never cached).
  if (request.method === 'OPTIONS') return preflight();
  var checked = SETTINGS.mode === 'none' ? request : await checkKey(request);
  return checked === request ? pinRelease(request) : checked;
}

/** The preflight answer: the contract's CORS values, passed in SETTINGS by key-gate.ts. */
function preflight() {
  var headers = {};
  for (var name in SETTINGS.preflight) headers[name.toLowerCase()] = { value: SETTINGS.preflight[name] };
  return { statusCode: 204, statusDescription: 'No Content', headers: headers };
}

/** An API request that names no release is answered from the current one, named in its cache key. */
async function pinRelease(request) {
  var query = request.querystring;
  if (request.uri.indexOf(SETTINGS.api) !== 0 || query[SETTINGS.release.named] || query[SETTINGS.release.current])
    return request;
  var current = await read('release:current', 'string');
  if (current) query[SETTINGS.release.current] = { value: current };
  return request;
}

/** The request, or the refusal to send instead. */
async function checkKey(request) {
  var header = request.headers.authorization;
  // Keys never travel further than this function: not to the cache key, the origin or its logs.
  delete request.headers.authorization;
  if (!header) {
    if (SETTINGS.mode === 'open') return request;
    return refuse(request, 401, REALM, 'this API requires an API key: send it as "Authorization: Bearer <key>"');
  }
  if (header.multiValue && header.multiValue.length > 1) {
    return refuse(request, 401, REALM + ', error="invalid_request"', 'send one Authorization header');
  }
  if (!/^\s*Bearer(\s|$)/i.test(header.value)) {
    return refuse(
      request,
      401,
      REALM,
      'API keys are sent as "Authorization: Bearer <key>"; other schemes are not accepted',
    );
  }
  var bearer = BEARER.exec(header.value);
  if (!bearer) {
    return refuse(
      request,
      401,
      REALM + ', error="invalid_request"',
      'send the key as "Authorization: Bearer <key>": the word Bearer, one space, the key, and nothing else (no other spaces or tabs)',
    );
  }
  var presented = bearer[1];
  var parts = KEY.exec(presented);
  var id = parts ? parts[1] : null;

  var secret = await read('secret', 'string');
  if (!secret) return refuse(request, 503, null, 'API keys cannot be checked right now; try again shortly', 30);
  var record = id ? await read('key:' + id, 'json') : null;
  // The HMAC is computed for every presented value, known or not, so timing tells nothing.
  var expected = record && /^[0-9a-f]{64}$/.test(record.hash) ? record.hash : DUMMY_HASH;
  var actual = crypto.createHmac('sha256', Buffer.from(secret, 'hex')).update(presented).digest('hex');
  if (!sameText(actual, expected) || !record || !id) {
    return refuse(
      request,
      401,
      REALM + ', error="invalid_token"',
      'the API key is malformed or unknown; keys look like isoatlas_<id>_<secret> and are sent as "Authorization: Bearer <key>"',
    );
  }
  if (record.revoked_at) {
    return refuse(
      request,
      401,
      REALM + ', error="invalid_token"',
      'the API key ' + id + ' was revoked on ' + record.revoked_at,
    );
  }
  // A lettered id names its tier to WAF; one naming another tier than its record would be counted there.
  if (id.length > 8 && SETTINGS.letters[record.tier] !== id.charAt(0)) {
    return refuse(
      request,
      401,
      REALM + ', error="invalid_token"',
      'the API key ' +
        id +
        ' does not carry the letter of its tier (' +
        record.tier +
        '): it must be reissued; ask for a new key',
    );
  }
  var now = Math.floor(Date.now() / 1000);
  if (record.exhausted_until > now) {
    var until = new Date(record.exhausted_until * 1000).toISOString();
    return refuse(
      request,
      429,
      null,
      'the daily quota of API key ' + id + ' (tier ' + record.tier + ') is used up until ' + until,
      record.exhausted_until - now,
    );
  }
  // The day meter counts these lines (key id and tier, never key material; kvs-layout.ts meterLine).
  if (SETTINGS.metered.indexOf(record.tier) >= 0)
    console.log('isoatlas-meter key=' + id + ' tier=' + encodeURIComponent(record.tier));
  return request;
}

async function read(name, format) {
  try {
    return await kvs.get(name, { format: format });
  } catch (err) {
    return null; // a missing key is an error from the store
  }
}

/** Compares two strings in time that depends on their lengths only. */
function sameText(a, b) {
  var diff = a.length ^ b.length;
  for (var i = 0; i < b.length; i++) diff |= a.charCodeAt(i % a.length) ^ b.charCodeAt(i);
  return diff === 0;
}

/** The URI with every run of 8 or more characters of a key's alphabet (percent-encoded, once or
 * more, or not) masked unless it is a lowercase word: no piece of a key pasted in any shape comes back.
 * Blunter than the server's rule (edge/access/redaction.ts), which would not fit in this function. */
function masked(uri) {
  return uri.replace(/[A-Za-z0-9_%-]{8,}/g, (token) => {
    var text = token;
    for (var i = 0; i < 3; i++) {
      text = text.replace(/%([0-9A-Fa-f]{2})/g, (_, hex) => String.fromCharCode(parseInt(hex, 16)));
    }
    if (/^[a-z]+$/.test(text)) return token;
    return /^isoatlas_/i.test(text) ? 'isoatlas_[redacted]' : '[redacted]';
  });
}

function refuse(request, status, challenge, detail, retryAfter) {
  var headers = {
    'content-type': { value: 'application/problem+json' },
    'cache-control': { value: 'no-store' },
    // The contract's CORS values, as on every other answer (SETTINGS.preflight holds them).
    'access-control-allow-origin': { value: SETTINGS.preflight['Access-Control-Allow-Origin'] },
    'access-control-expose-headers': { value: SETTINGS.preflight['Access-Control-Expose-Headers'] },
  };
  if (challenge) headers['www-authenticate'] = { value: challenge };
  if (retryAfter) headers['retry-after'] = { value: String(retryAfter) };
  var body = {
    type: 'about:blank',
    title: TITLES[status],
    status: status,
    detail: detail,
    instance: masked(request.uri),
  };
  return {
    statusCode: status,
    statusDescription: TITLES[status],
    headers: headers,
    body: { encoding: 'text', data: JSON.stringify(body) },
  };
}
