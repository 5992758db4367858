/**
 * Secrets handed to people and programs: API keys, ingest tokens, single-use links. Only their
 * SHA-256 is stored; the clear value exists once, in the response that creates it.
 */
import { createHash, randomBytes, randomInt, timingSafeEqual } from "node:crypto";

const BASE62 = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

export const API_KEY_PREFIX_LENGTH = 12;

function base62(length: number): string {
  let out = "";
  for (let i = 0; i < length; i++) out += BASE62[randomInt(62)];
  return out;
}

export function sha256(value: string): string {
  return createHash("sha256").update(value).digest("hex");
}

export function sameHash(a: string, b: string): boolean {
  const left = Buffer.from(a, "hex");
  const right = Buffer.from(b, "hex");
  return left.length === right.length && timingSafeEqual(left, right);
}

/** `svc_` and 40 base62 characters; its first 12 characters are its public prefix. */
export function newApiKeySecret(): { secret: string; prefix: string; hash: string } {
  const secret = `svc_${base62(40)}`;
  return { secret, prefix: secret.slice(0, API_KEY_PREFIX_LENGTH), hash: sha256(secret) };
}

export function looksLikeApiKey(value: string): boolean {
  return /^svc_[0-9A-Za-z]{40}$/.test(value);
}

/** `<org_slug>_<43 base64url characters>` (32 random bytes). */
export function newIngestToken(orgSlug: string): { token: string; prefix: string; hash: string } {
  const token = `${orgSlug}_${randomBytes(32).toString("base64url")}`;
  return { token, prefix: token.slice(0, orgSlug.length + 5), hash: sha256(token) };
}

/** A single-use token for invite and password-reset links. */
export function newLinkToken(): { token: string; hash: string } {
  const token = randomBytes(32).toString("base64url");
  return { token, hash: sha256(token) };
}
