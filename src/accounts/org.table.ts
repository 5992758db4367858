export interface OrgTable {
  id: string;
  name: string;
  slug: string;
  plan: "free" | "pro" | "enterprise";
  /** The settings document as JSON (no secrets). */
  settings: string;
  /** Bumped on every settings change; the document's ETag. */
  settings_version: number;
  created_at: number;
  updated_at: number;
}
