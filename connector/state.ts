/**
 * The state file: the last cursor whose events all reached the sink. Written atomically (a
 * temp file in the same directory, fsync, rename, fsync of the directory), so a crash leaves
 * either the old or the new cursor, never a torn file. Saves are coalesced: at most one write
 * per `intervalMs`, and `flush()` writes what is pending (shutdown).
 */
import {
  accessSync,
  closeSync,
  constants,
  existsSync,
  fsyncSync,
  openSync,
  readFileSync,
  renameSync,
  statSync,
  writeSync,
} from "node:fs";
import { basename, dirname, join, resolve } from "node:path";

export interface SavedState {
  cursor: string;
}

/** A problem with `path` as a state file, or null when it can be used. */
export function checkStateFile(path: string): string | null {
  const full = resolve(path);
  const dir = dirname(full);
  if (!existsSync(dir) || !statSync(dir).isDirectory()) {
    return `--state-file: directory ${dir} does not exist`;
  }
  try {
    accessSync(dir, constants.W_OK);
  } catch {
    return `--state-file: directory ${dir} is not writable`;
  }
  if (!existsSync(full)) return null;
  try {
    readState(full);
    return null;
  } catch (error) {
    return `--state-file: ${(error as Error).message}`;
  }
}

/** The saved state, or null when the file does not exist. Throws on a file that is not ours. */
export function readState(path: string): SavedState | null {
  if (!existsSync(path)) return null;
  const text = readFileSync(path, "utf8");
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    throw new Error(`${path} is not a connector state file (not JSON)`);
  }
  const cursor = (parsed as { cursor?: unknown } | null)?.cursor;
  if (typeof cursor !== "string" || cursor === "") {
    throw new Error(`${path} is not a connector state file (no cursor)`);
  }
  return { cursor };
}

export class StateFile {
  private readonly path: string;
  private pending: string | null = null;
  private timer: ReturnType<typeof setTimeout> | null = null;
  private lastWritten: string | null = null;
  writes = 0;

  constructor(
    path: string,
    private readonly url: string,
    private readonly intervalMs = 100,
    private readonly onError: (error: Error) => void = () => {},
  ) {
    this.path = resolve(path);
  }

  load(): SavedState | null {
    const state = readState(this.path);
    this.lastWritten = state?.cursor ?? null;
    return state;
  }

  /** Records `cursor` as committed; written within `intervalMs`. */
  save(cursor: string): void {
    if (cursor === this.lastWritten && this.pending === null) return;
    this.pending = cursor;
    if (this.timer === null) this.timer = setTimeout(() => this.flush(), this.intervalMs);
  }

  /** Writes the pending cursor now, if any. */
  flush(): void {
    if (this.timer !== null) {
      clearTimeout(this.timer);
      this.timer = null;
    }
    const cursor = this.pending;
    if (cursor === null) return;
    this.pending = null;
    try {
      this.write(cursor);
      this.lastWritten = cursor;
      this.writes += 1;
    } catch (error) {
      // Not fatal: the cursor stays pending and is tried again; delivery goes on.
      this.pending ??= cursor;
      this.onError(error as Error);
      this.timer = setTimeout(() => this.flush(), 1000);
    }
  }

  private write(cursor: string): void {
    const dir = dirname(this.path);
    const temp = join(dir, `.${basename(this.path)}.${process.pid}.tmp`);
    const body = `${JSON.stringify({ cursor, url: this.url, saved_at: new Date().toISOString() })}\n`;
    const fd = openSync(temp, "w", 0o600);
    try {
      writeSync(fd, body);
      fsyncSync(fd);
    } finally {
      closeSync(fd);
    }
    renameSync(temp, this.path);
    try {
      const dirFd = openSync(dir, "r");
      try {
        fsyncSync(dirFd);
      } finally {
        closeSync(dirFd);
      }
    } catch {
      // Some file systems refuse fsync on a directory; the rename itself is still atomic.
    }
  }
}
