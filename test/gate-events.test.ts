// The key gate's event fixtures (test/fixtures/gate-events/*.json): viewer-request events in the shape
// `aws cloudfront test-function --event-object fileb://…` takes, run here through the harness in each
// arrangement, with the outcome the go-live checklist in docs/OPERATIONS.md tells an operator to
// expect from the deployed gate. The checklist's table is read back and must agree with the table
// here, and every fixture it names must exist.
import { describe, expect, it } from 'vitest';
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveAccessConfig } from '../edge/access/config.js';
import { keyGateCode, keyGateSettings } from '../edge/cloudfront/key-gate.js';
import { CURRENT_RELEASE_ENTRY, SECRET_ENTRY } from '../edge/cloudfront/kvs-layout.js';
import { DEFAULT_RELEASE_PARAM } from '../edge/contract/routes.js';
import { loadCloudFrontFunction, type ViewerRequestEvent } from './helpers/cloudfront-function.js';

const REPO = fileURLToPath(new URL('..', import.meta.url));
const DIR = 'test/fixtures/gate-events';
const MODES = ['none', 'open', 'key-required'] as const;
type Mode = (typeof MODES)[number];

/** What the gate does with an event: a status it answers with, or the request it sends on (with the
 * store's current release added to its query, or as it came). */
type Outcome = '204' | '401' | 'request' | 'request + release:current';

/** The expected outcome of each fixture, per arrangement (none: no access control). */
const EXPECTED: Record<string, Record<Mode, Outcome>> = {
  preflight: { none: '204', open: '204', 'key-required': '204' },
  'preflight-structure': { none: '204', open: '204', 'key-required': '204' },
  'api-no-key': { none: 'request + release:current', open: 'request + release:current', 'key-required': '401' },
  'api-release-named': { none: 'request', open: 'request', 'key-required': '401' },
  'api-malformed-key': { none: 'request + release:current', open: '401', 'key-required': '401' },
  'api-other-scheme': { none: 'request + release:current', open: '401', 'key-required': '401' },
  'structure-no-key': { none: 'request', open: 'request', 'key-required': '401' },
};

/** A store as a deployment has it after `keys publish` and `publish --kvs`: a secret and a release. */
const STORE = new Map([
  [SECRET_ENTRY, 'ab'.repeat(32)],
  [CURRENT_RELEASE_ENTRY, '2026.12-current'],
]);

const fixture = (name: string): ViewerRequestEvent => JSON.parse(readFileSync(join(REPO, DIR, `${name}.json`), 'utf8'));

function gate(mode: Mode) {
  return loadCloudFrontFunction(
    keyGateCode(keyGateSettings(mode === 'none' ? null : resolveAccessConfig({}, mode))),
    STORE,
    () => Date.parse('2026-11-25T10:00:00Z'),
  );
}

async function outcome(mode: Mode, name: string): Promise<Outcome> {
  const event = fixture(name);
  const out = await gate(mode).handler(event);
  if (out.statusCode !== undefined) return String(out.statusCode) as Outcome;
  if (JSON.stringify(out.querystring) === JSON.stringify(event.request.querystring)) return 'request';
  // The current release, under the parameter links do not carry (edge/pinning.ts).
  expect(out.querystring).toEqual({
    ...event.request.querystring,
    [DEFAULT_RELEASE_PARAM]: { value: STORE.get(CURRENT_RELEASE_ENTRY) },
  });
  return 'request + release:current';
}

/** The checklist's rows: `| test/fixtures/gate-events/<name>.json | <none> | <A> | <B> |`. */
function checklistRows(): Map<string, Record<Mode, string>> {
  const text = readFileSync(join(REPO, 'docs/OPERATIONS.md'), 'utf8');
  const rows = new Map<string, Record<Mode, string>>();
  for (const m of text.matchAll(
    /^ *\| `test\/fixtures\/gate-events\/([\w-]+)\.json` \| ([^|]+)\| ([^|]+)\| ([^|]+)\|$/gm,
  )) {
    const cell = (s: string) => s.trim().replace(/`/g, '');
    rows.set(m[1], { none: cell(m[2]), open: cell(m[3]), 'key-required': cell(m[4]) });
  }
  return rows;
}

describe('gate event fixtures', () => {
  it('are viewer-request events in the shape CloudFront Functions takes (lowercase header names, version 1.0)', () => {
    const files = readdirSync(join(REPO, DIR)).filter((f) => f.endsWith('.json'));
    expect(files.map((f) => f.slice(0, -'.json'.length)).sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const f of files) {
      const event = fixture(f.slice(0, -'.json'.length));
      expect(event.version, f).toBe('1.0');
      expect(event.context.eventType, f).toBe('viewer-request');
      expect(Object.keys(event.request).sort(), f).toEqual(['cookies', 'headers', 'method', 'querystring', 'uri']);
      for (const name of Object.keys(event.request.headers)) expect(name, f).toBe(name.toLowerCase());
    }
  });

  for (const [name, expected] of Object.entries(EXPECTED)) {
    it(`${name}: ${MODES.map((m) => `${m} → ${expected[m]}`).join(', ')}`, async () => {
      for (const mode of MODES) expect(await outcome(mode, name), mode).toBe(expected[mode]);
    });
  }

  it('the go-live checklist names only fixtures that exist, all of them, with the outcomes above', () => {
    const rows = checklistRows();
    expect([...rows.keys()].sort()).toEqual(Object.keys(EXPECTED).sort());
    for (const [name, expected] of Object.entries(EXPECTED)) expect(rows.get(name), name).toEqual(expected);
    // Every fixture path named anywhere in the document exists.
    const text = readFileSync(join(REPO, 'docs/OPERATIONS.md'), 'utf8');
    for (const m of text.matchAll(/test\/fixtures\/gate-events\/([\w-]+)\.json/g))
      expect(Object.keys(EXPECTED), m[0]).toContain(m[1]);
  });
});
