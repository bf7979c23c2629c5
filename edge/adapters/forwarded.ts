// Who is asking, when a front (nginx, a load balancer) passes requests on: the front's own address is
// the connection's peer, and the client's is in X-Forwarded-For. The header is read only from the
// fronts the operator named (`isoatlas serve --trust-proxy`); from anyone else it could be forged, so
// the peer's address stands.
import { isIP } from 'node:net';

/** Fronts trusted to say who their client is, by address. */
export class TrustedFronts {
  private readonly addresses: Set<string>;

  constructor(addresses: readonly string[]) {
    for (const address of addresses) {
      if (!isIP(address))
        throw new Error(`--trust-proxy takes IP addresses (such as 127.0.0.1 or ::1); "${address}" is not one`);
    }
    this.addresses = new Set(addresses.map(plainAddress));
  }

  /** Whether the connection's peer is a trusted front. */
  trusts(peer: string | undefined): boolean {
    return peer !== undefined && this.addresses.has(plainAddress(peer));
  }

  /** The client's address: from a trusted front, the last address of its X-Forwarded-For (the one it
   * added itself, whatever the client sent before it); otherwise the peer's. */
  clientOf(peer: string | undefined, forwardedFor: string | undefined): string | undefined {
    if (!this.trusts(peer) || !forwardedFor) return peer;
    const last = forwardedFor.split(',').pop()!.trim();
    return isIP(last) ? plainAddress(last) : peer;
  }
}

/** An IPv4 address as such, not in the IPv4-mapped IPv6 form a dual-stack socket reports. */
function plainAddress(address: string): string {
  return address.startsWith('::ffff:') && isIP(address.slice(7)) === 4 ? address.slice(7) : address;
}
