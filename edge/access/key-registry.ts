// What the edge knows of a key: its hash, tier and revocation. Names, affiliations and intended use
// stay in the curators' registry and never reach the edge.

export interface EdgeKeyRecord {
  id: string;
  hash: string;
  tier: string;
  revoked_at: string | null;
}

export interface KeyRegistry {
  /** The record for a key id, or null. Implementations cache, but for at most `maxStaleMs`, so a
   * revocation is seen within that time. */
  lookup(id: string): Promise<EdgeKeyRecord | null>;
  readonly description: string;
}
