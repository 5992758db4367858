/**
 * A bounded map whose entries expire `ttlMs` after they were set; cleared whole when full. Time
 * is monotonic, so a wall clock stepped back cannot stretch an entry's life.
 */
export class ExpiringCache<K, V> {
  private readonly entries = new Map<K, { value: V; expires: number }>();

  constructor(
    private readonly ttlMs: number,
    private readonly maxEntries: number,
  ) {}

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    if (entry.expires <= performance.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return entry.value;
  }

  set(key: K, value: V): void {
    if (this.entries.size >= this.maxEntries && !this.entries.has(key)) this.entries.clear();
    this.entries.set(key, { value, expires: performance.now() + this.ttlMs });
  }

  clear(): void {
    this.entries.clear();
  }
}
