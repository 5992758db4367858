/**
 * Ingest-token credentials by token hash, kept for one second: every ingest request needs one,
 * and the read on the reader connection was a fifth of the request's CPU. A revoke in this
 * process forgets them once it commits; a plan changed by `svc admin` (another process) is seen
 * within the second, inside DESIGN's two. Unknown tokens are not kept, so a new token works at
 * once.
 */
import type { Store } from "../db/store.ts";
import { ExpiringCache } from "../expiring-cache.ts";
import { findLiveTokenByHash, type IngestCredential } from "./ingest-tokens.repository.ts";
import { sha256 } from "./secrets.ts";

const TTL_MS = 1000;
const MAX_ENTRIES = 10_000;

export class IngestCredentials {
  private readonly cache = new ExpiringCache<string, IngestCredential>(TTL_MS, MAX_ENTRIES);

  constructor(private readonly store: Store) {}

  /** The live credential for a clear token, or null. */
  find(token: string): IngestCredential | null {
    const hash = sha256(token);
    const cached = this.cache.get(hash);
    if (cached !== undefined) return cached;
    const found = findLiveTokenByHash(this.store, hash);
    if (found) this.cache.set(hash, found);
    return found;
  }

  /** Called inside the write unit that revokes a token: forgets every credential once it commits. */
  forgetAfterCommit(): void {
    this.store.afterCommit(() => this.cache.clear());
  }
}
