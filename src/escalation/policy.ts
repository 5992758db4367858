/** Escalation policies as the API shows them. */
import { Type as T } from "@sinclair/typebox";
import { Name, Strict, Timestamp } from "../http/schema.ts";
import { iso } from "../time.ts";
import type { EscalationPolicyTable } from "./policy.table.ts";

export const TARGET_TYPES = ["user", "schedule", "channel"] as const;
export type TargetType = (typeof TARGET_TYPES)[number];

const Target = Strict({
  type: T.Union(TARGET_TYPES.map((t) => T.Literal(t))),
  id: T.String({ minLength: 1, maxLength: 64 }),
});

const StepInput = Strict({
  delay_seconds: T.Integer({
    minimum: 0,
    maximum: 7 * 86_400,
    description: "How long to wait after notifying this step before escalating to the next.",
  }),
  targets: T.Array(Target, { minItems: 1, maxItems: 20 }),
});

export const PolicyInput = Strict({
  name: Name(),
  team_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  repeat: T.Optional(T.Integer({ minimum: 0, maximum: 20, description: "Extra passes through the steps." })),
  steps: T.Array(StepInput, { minItems: 1, maxItems: 20 }),
});

export const PolicyPatch = Strict({
  name: T.Optional(Name()),
  team_id: T.Optional(T.Union([T.String({ minLength: 1, maxLength: 64 }), T.Null()])),
  repeat: T.Optional(T.Integer({ minimum: 0, maximum: 20 })),
  steps: T.Optional(T.Array(StepInput, { minItems: 1, maxItems: 20 })),
});

export const Policy = T.Object({
  id: T.String(),
  name: T.String(),
  team_id: T.Union([T.String(), T.Null()]),
  repeat: T.Integer(),
  steps: T.Array(
    T.Object({
      id: T.String(),
      delay_seconds: T.Integer(),
      targets: T.Array(T.Object({ type: T.String(), id: T.String() })),
    }),
  ),
  created_at: Timestamp(),
  updated_at: Timestamp(),
});

export interface StoredStep {
  id: string;
  delay_seconds: number;
  targets: { type: TargetType; id: string }[];
}

/** What an alert keeps of its policy when it fires (later edits do not change it). */
export interface PolicySnapshot {
  id: string;
  name: string;
  repeat: number;
  steps: StoredStep[];
}

export function parseSteps(row: EscalationPolicyTable): StoredStep[] {
  return JSON.parse(row.steps) as StoredStep[];
}

export function toPolicy(row: EscalationPolicyTable) {
  return {
    id: row.id,
    name: row.name,
    team_id: row.team_id,
    repeat: row.repeat,
    steps: parseSteps(row),
    created_at: iso(row.created_at),
    updated_at: iso(row.updated_at),
  };
}

export function snapshotOf(row: EscalationPolicyTable): PolicySnapshot {
  return { id: row.id, name: row.name, repeat: row.repeat, steps: parseSteps(row) };
}
