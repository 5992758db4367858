/**
 * At-least-once bookkeeping. Events are delivered concurrently and finish in any order; the
 * committed cursor only moves over a contiguous run of finished entries from the oldest one, so
 * a crash re-delivers what might not have reached the sink and never skips anything.
 */

export interface WindowEntry {
  /** The cursor after this entry (stream: every event; poll: a marker after the page). */
  cursor: string | undefined;
  done: boolean;
}

export class CursorWindow {
  private entries: WindowEntry[] = [];
  private head = 0;
  private waiters: (() => void)[] = [];
  committed: string | undefined;

  constructor(
    private readonly maxPending: number,
    private readonly onCommit: (cursor: string) => void,
  ) {}

  /** Entries not yet committed (in flight, or finished behind an unfinished one). */
  get pending(): number {
    return this.entries.length - this.head;
  }

  private get full(): boolean {
    return this.pending >= this.maxPending;
  }

  /** Resolves when an entry may be added (or at once when `signal` aborted). */
  room(signal: AbortSignal): Promise<void> {
    if (!this.full || signal.aborted) return Promise.resolve();
    return new Promise((resolve) => {
      const wake = () => {
        signal.removeEventListener("abort", wake);
        resolve();
      };
      this.waiters.push(wake);
      signal.addEventListener("abort", wake, { once: true });
    });
  }

  add(cursor: string | undefined, done = false): WindowEntry {
    const entry = { cursor, done };
    this.entries.push(entry);
    if (done) this.advance();
    return entry;
  }

  complete(entry: WindowEntry): void {
    entry.done = true;
    this.advance();
  }

  private advance(): void {
    let cursor: string | undefined;
    while (this.head < this.entries.length) {
      const entry = this.entries[this.head] as WindowEntry;
      if (!entry.done) break;
      if (entry.cursor !== undefined) cursor = entry.cursor;
      this.head += 1;
    }
    if (this.head > 1024 && this.head * 2 > this.entries.length) {
      this.entries = this.entries.slice(this.head);
      this.head = 0;
    }
    if (cursor !== undefined && cursor !== this.committed) {
      this.committed = cursor;
      this.onCommit(cursor);
    }
    while (!this.full && this.waiters.length > 0) this.waiters.shift()?.();
  }
}

/** A counting semaphore: at most `size` deliveries in flight. */
export class Slots {
  private used = 0;
  private waiters: (() => void)[] = [];

  constructor(private readonly size: number) {}

  get inUse(): number {
    return this.used;
  }

  acquire(signal: AbortSignal): Promise<boolean> {
    if (signal.aborted) return Promise.resolve(false);
    if (this.used < this.size) {
      this.used += 1;
      return Promise.resolve(true);
    }
    return new Promise((resolve) => {
      const take = () => {
        signal.removeEventListener("abort", cancel);
        this.used += 1;
        resolve(true);
      };
      const cancel = () => {
        this.waiters = this.waiters.filter((w) => w !== take);
        resolve(false);
      };
      this.waiters.push(take);
      signal.addEventListener("abort", cancel, { once: true });
    });
  }

  release(): void {
    this.used -= 1;
    const next = this.waiters.shift();
    next?.();
  }
}
