/**
 * Remembers message hashes across requests, so a request's mirror work is proportional to what is new
 * in it (docs/BENCHMARKS.md): Claude Code re-sends the whole history every turn, and re-canonicalising and
 * re-hashing it all costs far more than the native JSON serialisation that finds it here. Bounded by
 * the bytes of the keys it holds; least recently used first out. Pure.
 */

/** A bounded map from a message's JSON text to its canonical hash. */
export class HashCache {
  private readonly entries = new Map<string, string>();
  private bytes = 0;
  hits = 0;
  misses = 0;

  constructor(private readonly maxBytes = 64 * 1024 * 1024) {}

  /** The hash for `key`, computing it with `compute` when unknown. */
  get(key: string, compute: () => string): string {
    const known = this.entries.get(key);
    if (known !== undefined) {
      this.hits++;
      this.entries.delete(key);
      this.entries.set(key, known); // most recently used last
      return known;
    }
    this.misses++;
    const hash = compute();
    if (key.length * 2 > this.maxBytes) return hash; // too big to keep: computed each time
    this.entries.set(key, hash);
    this.bytes += key.length * 2;
    for (const [old] of this.entries) {
      if (this.bytes <= this.maxBytes) break;
      this.entries.delete(old);
      this.bytes -= old.length * 2;
    }
    return hash;
  }
}
