// The firewall rule shipped for the nginx front (docs/nginx-front.nft): nginx cannot cap one address's
// connections before they carry a request (limit_conn counts requests in progress), so the rule caps
// them, per address and per IPv6 /64, at the server's own share. Checked with nft, then at work in a
// network namespace of its own (test/helpers/netns-firewall.ts), where loading it touches nothing of
// this machine's: those tests need root and are skipped, saying so, without it.
import { beforeAll, describe, expect, inject, it } from 'vitest';
import { readFileSync } from 'node:fs';
import { SERVER_LIMITS } from '../edge/adapters/server-limits.js';
import { frontRequests } from './helpers/nginx-front.js';
import {
  NFT,
  RULESET,
  netnsPermitted,
  netnsRun,
  openFileLimit,
  requireNft,
  type CapResult,
  type FrontResult,
} from './helpers/netns-firewall.js';
import { run } from './helpers/run.js';

const CAP = SERVER_LIMITS.maxConnectionsPerAddress;
/** The attack: one address holding this many slow connections (fewer only where this
 * process may not open as many files: the front, the server and the test need some). */
const ATTACKERS = Math.min(8_000, openFileLimit() - 512);
/** How long the other address may wait for each answer: far longer than an answer takes on a busy
 * machine, far shorter than a client waiting for a place would. */
const BOUND_MS = 5_000;
/** The front's headers timeout in that test: it cuts the slow connections every so often, and the
 * address opens them again, on ports it may just have used. */
const CUT_MS = 1_000;

let notPermitted: string | null = null;
beforeAll(async () => {
  notPermitted = await netnsPermitted();
  if (notPermitted === null) requireNft();
});

describe('the firewall rule for the nginx front (docs/nginx-front.nft)', () => {
  it("caps an address, and an IPv6 client's /64, at the connections the server allows one address", () => {
    const rule = readFileSync(RULESET, 'utf8');
    const caps = [...rule.matchAll(/(ip saddr|ip6 saddr & ([0-9a-f:]+)) ct count over (\d+)/g)];
    expect(caps.map((m) => [m[1].split(' ')[0], m[2] ?? null, Number(m[3])])).toEqual([
      ['ip', null, CAP],
      ['ip6', 'ffff:ffff:ffff:ffff::', CAP],
    ]);
  });

  it('is a valid nftables ruleset (nft -c -f; root)', async (ctx) => {
    ctx.skip(notPermitted !== null, notPermitted ?? '');
    // Checked against a namespace's empty ruleset: nothing of this machine's is read or changed.
    const checked = await run('unshare', ['--net', '--', NFT, '-c', '-f', RULESET]);
    expect(checked.stderr).toBe('');
    expect(checked.status).toBe(0);
  });

  it(`refuses an address its connections past ${CAP}, and an IPv6 /64 likewise, while other addresses connect (network namespace; root)`, async (ctx) => {
    ctx.skip(notPermitted !== null, notPermitted ?? '');
    const over = CAP + 16;
    const { opened } = await netnsRun<CapResult>({
      kind: 'cap',
      tries: {
        '127.0.0.2': over,
        '127.0.0.3': 10,
        // Two addresses of one /64 share its cap; another /64 has its own.
        '2001:db8:1::1': CAP / 2 + 8,
        '2001:db8:1::2': CAP / 2 + 8,
        '2001:db8:2::1': 10,
      },
    });
    expect(opened).toEqual({
      '127.0.0.2': CAP,
      '127.0.0.3': 10,
      '2001:db8:1::1': CAP / 2 + 8,
      '2001:db8:1::2': CAP / 2 - 8,
      '2001:db8:2::1': 10,
    });
  });

  it(`lets an address trying to hold ${ATTACKERS.toLocaleString('en')} slow connections to an nginx front behind it have ${CAP}, cut and opened again and again, while another address is answered 15 of 15, each within ${BOUND_MS / 1000} s (network namespace; root)`, async (ctx) => {
    ctx.skip(notPermitted !== null, notPermitted ?? '');
    const [file] = [...(await frontRequests(inject('fixtureTree'))).keys()].filter((k) =>
      k.startsWith('/api/v1/isoforms/'),
    );
    // Answered from a file by nginx, and passed to the server, in turn.
    const requests = Array.from({ length: 15 }, (_, i) => (i % 2 ? file : '/api/v1/genes/PRR5'));
    // A round after each time the front has cut as many connections as the address may hold.
    const result = await netnsRun<FrontResult>({
      kind: 'front',
      dir: inject('fixtureTree'),
      attackers: ATTACKERS,
      headersTimeoutMs: CUT_MS,
      cutPerRound: CAP,
      requests,
      boundMs: BOUND_MS,
    });
    // The address had its share and no more at every round, however often its connections were cut
    // and opened again; every other try was refused.
    expect(Math.max(...result.atFront)).toBeLessThanOrEqual(CAP);
    expect(result.closed).toBeGreaterThanOrEqual(15 * CAP);
    expect(result.refused).toBeGreaterThanOrEqual(ATTACKERS - CAP);
    expect(result.victim.map((v) => v.failure ?? v.status)).toEqual(Array(15).fill(200));
    for (const answer of result.victim) expect(answer.ms).toBeLessThan(BOUND_MS);
  });
});
