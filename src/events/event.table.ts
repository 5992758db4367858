import type { Generated } from "kysely";

export interface EventTable {
  seq: Generated<number>;
  org_id: string;
  id: string;
  source: string;
  type: string;
  subject: string | null;
  time: number;
  /** The structured-mode JSON of the event. */
  body: string;
  channel_id: string | null;
  created_at: number;
}

export interface EventHorizonTable {
  org_id: string;
  pruned_through: number;
}
