/**
 * Access matrices for the resource suites: a list of API calls, each marked as a read or a write,
 * run by clients that must be refused (401/403) or may only read (a viewer, a member).
 */
import { expect } from "bun:test";
import type { Client, Response2 } from "./harness.ts";

/** One call of a resource's API; `write` calls change something, reads do not. */
export interface AccessCall {
  label: string;
  write: boolean;
  run: (client: Client) => Promise<Response2>;
}

/** A well-formed API key that no server issued. */
export const UNKNOWN_KEY = "svc_notarealkeynotarealkeynotarealkeynotare";

/** Every call, made by each client, is answered with that client's status and error code. */
export async function expectRefused(
  calls: AccessCall[],
  refusals: readonly (readonly [Client, number, string])[],
): Promise<void> {
  for (const call of calls) {
    for (const [client, status, code] of refusals) {
      const res = await call.run(client);
      expect({ label: call.label, status: res.status, code: res.body?.error?.code }).toEqual({
        label: call.label,
        status,
        code,
      });
    }
  }
}

/** `client` gets 200 on every read and 403 `forbidden_role` on every write. */
export async function expectReadOnly(calls: AccessCall[], client: Client, who = ""): Promise<void> {
  for (const call of calls) {
    const label = who ? `${who} ${call.label}` : call.label;
    const res = await call.run(client);
    if (call.write) {
      expect({ label, status: res.status, code: res.body?.error?.code }).toEqual({
        label,
        status: 403,
        code: "forbidden_role",
      });
    } else {
      expect({ label, status: res.status }).toEqual({ label, status: 200 });
    }
  }
}
