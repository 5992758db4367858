/** Retry timing: exponential backoff with jitter, `Retry-After`, and sleeps that a stop cuts short. */

/**
 * The delay before retry `attempt` (1 = the first retry): `base · 2^(attempt-1)` capped at
 * `cap`, then "equal jitter" (a random point in its upper half), so retries of many events
 * spread out but never come back sooner than half the step.
 */
export function backoffMs(attempt: number, baseMs: number, capMs: number): number {
  const step = Math.min(capMs, baseMs * 2 ** Math.min(Math.max(attempt - 1, 0), 30));
  return Math.round(step / 2 + (Math.random() * step) / 2);
}

/** `Retry-After` in milliseconds (delta-seconds or an HTTP date), capped; undefined when absent or bad. */
export function retryAfterMs(header: string | null | undefined, capMs = 300_000): number | undefined {
  if (!header) return undefined;
  const trimmed = header.trim();
  let ms: number;
  if (/^\d+$/.test(trimmed)) ms = Number(trimmed) * 1000;
  else {
    const at = Date.parse(trimmed);
    if (Number.isNaN(at)) return undefined;
    ms = at - Date.now();
  }
  return Math.min(Math.max(ms, 0), capMs);
}

/** Resolves after `ms`, or at once when `signal` aborts (never rejects). */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted || ms <= 0) return Promise.resolve();
  return new Promise((resolve) => {
    const done = () => {
      clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}
