/**
 * In-memory token buckets for the per-org and per-channel limits of the CloudEvents plane. One
 * process serves an org, so memory is the right place (DESIGN §10 moves them into the database
 * for several replicas); a restart forgives what was spent, which errs on the caller's side.
 */
import { AppError } from "../errors.ts";

interface Bucket {
  tokens: number;
  updatedAt: number;
}

const MAX_BUCKETS = 100_000;

export class RateLimiter {
  private readonly buckets = new Map<string, Bucket>();

  /**
   * Takes `cost` tokens from the bucket `key` that holds `capacity` and refills `capacity`
   * every `periodMs`; returns 0 when granted, else the seconds to wait before retrying.
   */
  take(key: string, capacity: number, periodMs: number, cost = 1, now = Date.now()): number {
    let bucket = this.buckets.get(key);
    if (!bucket) {
      if (this.buckets.size >= MAX_BUCKETS) this.buckets.clear();
      bucket = { tokens: capacity, updatedAt: now };
      this.buckets.set(key, bucket);
    }
    const rate = capacity / periodMs;
    bucket.tokens = Math.min(capacity, bucket.tokens + (now - bucket.updatedAt) * rate);
    bucket.updatedAt = now;
    // A cost larger than the bucket (a big batch) passes on a full bucket and leaves a debt.
    const needed = Math.min(cost, capacity);
    if (needed <= bucket.tokens) {
      bucket.tokens -= cost;
      return 0;
    }
    const missing = needed - bucket.tokens;
    return Math.max(1, Math.ceil(missing / rate / 1000));
  }
}

export function rateLimited(retryAfterSeconds: number, message: string): AppError {
  return new AppError(
    "rate_limited",
    message,
    { retry_after_seconds: retryAfterSeconds },
    {
      "retry-after": String(retryAfterSeconds),
    },
  );
}
