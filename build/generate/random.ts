// A tiny seeded PRNG. Math.random() cannot be seeded, and the demo tracks must be byte-identical
// for the same release database and seed, so every random draw in build/generate comes from here.

/** FNV-1a over the parts, then a murmur3 finaliser: turns (seed, track, id) into a 32-bit seed. */
export function hashSeed(seed: number, ...parts: string[]): number {
  let h = 0x811c9dc5;
  const text = [String(seed), ...parts].join('\u0000');
  for (let i = 0; i < text.length; i++) {
    h = Math.imul(h ^ text.charCodeAt(i), 0x01000193);
  }
  h = Math.imul(h ^ (h >>> 16), 0x85ebca6b);
  h = Math.imul(h ^ (h >>> 13), 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

export class Rng {
  private state: number;

  constructor(seed: number) {
    this.state = seed >>> 0;
  }

  /** A stream keyed by (seed, parts): one per gene or isoform, so adding rows elsewhere does not reshuffle it. */
  static for(seed: number, ...parts: string[]): Rng {
    return new Rng(hashSeed(seed, ...parts));
  }

  /** mulberry32: uniform in [0, 1). */
  next(): number {
    this.state = (this.state + 0x6d2b79f5) | 0;
    let t = Math.imul(this.state ^ (this.state >>> 15), 1 | this.state);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  }

  /** Uniform integer in [min, max], both inclusive. */
  int(min: number, max: number): number {
    if (max < min) throw new RangeError(`int(${min}, ${max}): empty range`);
    return min + Math.floor(this.next() * (max - min + 1));
  }

  /** Uniform real in [min, max). */
  float(min: number, max: number): number {
    return min + this.next() * (max - min);
  }

  chance(p: number): boolean {
    return this.next() < p;
  }

  pick<T>(items: readonly T[]): T {
    if (items.length === 0) throw new RangeError('pick() from an empty array');
    return items[Math.floor(this.next() * items.length)] as T;
  }

  /** Index drawn with the given non-negative weights. */
  weighted(weights: readonly number[]): number {
    const total = weights.reduce((a, b) => a + b, 0);
    let r = this.next() * total;
    for (let i = 0; i < weights.length; i++) {
      r -= weights[i] as number;
      if (r < 0) return i;
    }
    return weights.length - 1;
  }

  /** Standard normal (Box–Muller). */
  normal(): number {
    const u = 1 - this.next(); // (0, 1]: log(0) would be -Infinity
    return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * this.next());
  }
}
