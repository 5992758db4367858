/**
 * `Idempotency-Key` on POST: the first successful response is kept for 24 hours per caller and
 * key, and replayed for a retry with the same request; the same key with another request is
 * 409 `idempotency_conflict`. Fields that carry a secret are left out of what is stored.
 */

import { sha256 } from "../accounts/secrets.ts";
import type { Db, Store } from "../db/store.ts";
import { AppError, errors } from "../errors.ts";
import { DAY } from "../time.ts";
import {
  deleteIdempotencyRecords,
  findIdempotencyRecord,
  upsertIdempotencyRecord,
} from "./idempotency.repository.ts";
import type { Reply } from "./route.ts";

export const IDEMPOTENCY_TTL_MS = DAY;

export class Idempotency {
  private readonly inFlight = new Set<string>();

  constructor(private readonly store: Store) {}

  static hashRequest(method: string, path: string, body: string): string {
    return sha256(`${method}\n${path}\n${body}`);
  }

  static checkKey(key: string): void {
    if (key.length < 1 || key.length > 255 || !/^[\x21-\x7e]+$/.test(key)) {
      throw errors.field("Idempotency-Key", "must be 1-255 visible ASCII characters");
    }
  }

  /** A stored reply for this key, or null when the request should run (and is now in flight). */
  async begin(principal: string, key: string, requestHash: string): Promise<Reply | null> {
    const row = await findIdempotencyRecord(this.store.read, principal, key, Date.now() - IDEMPOTENCY_TTL_MS);
    if (row) {
      if (row.request_hash !== requestHash) {
        throw new AppError("idempotency_conflict", "This Idempotency-Key was used with a different request.");
      }
      return { status: row.status, body: JSON.parse(row.body), headers: { "idempotent-replayed": "true" } };
    }
    const slot = `${principal}\u0000${key}`;
    if (this.inFlight.has(slot)) {
      throw new AppError("conflict", "A request with this Idempotency-Key is still in progress.");
    }
    this.inFlight.add(slot);
    return null;
  }

  async finish(
    principal: string,
    key: string,
    requestHash: string,
    result: Reply | null,
    secretFields: string[],
  ) {
    this.inFlight.delete(`${principal}\u0000${key}`);
    if (!result || result.status >= 300) return;
    const body = stripFields(result.body, secretFields);
    await this.store.write((tx) =>
      upsertIdempotencyRecord(tx, {
        principal,
        idempotency_key: key,
        request_hash: requestHash,
        status: result.status,
        body: JSON.stringify(body ?? null),
        created_at: Date.now(),
      }),
    );
  }
}

function stripFields(body: unknown, fields: string[]): unknown {
  if (fields.length === 0 || typeof body !== "object" || body === null) return body;
  const copy = { ...(body as Record<string, unknown>) };
  for (const field of fields) delete copy[field];
  return copy;
}

/** Forgets records older than 24 hours. */
export function pruneIdempotency(db: Db, now: number): Promise<number> {
  return deleteIdempotencyRecords(db, now - IDEMPOTENCY_TTL_MS);
}
