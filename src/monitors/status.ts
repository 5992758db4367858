/**
 * A monitor's `up`/`down` status changes in one place, each with its
 * `run.service.monitor.{down,up}.v1` event in the same transaction. Event data leaves out the
 * monitor's routing credential (integration key, ping URL): event consumers are not meant to
 * hold it.
 */
import { findOrgById } from "../accounts/orgs.repository.ts";
import type { Db } from "../db/store.ts";
import { appendEvent } from "../events/outbox.ts";
import type { MonitorTable } from "./monitor.table.ts";
import { toMonitor } from "./monitor.ts";
import { findMonitorById, updateMonitor } from "./monitors.repository.ts";

/** Sets the status (a no-op when it is already so) and returns the monitor as it now is. */
export async function setMonitorStatus(tx: Db, monitor: MonitorTable, status: "up" | "down", now: number) {
  if (monitor.status === status) return monitor;
  const changed = { ...monitor, status, updated_at: now };
  await updateMonitor(tx, monitor.id, { status, updated_at: now });
  const org = await findOrgById(tx, monitor.org_id);
  if (org) {
    const { integration_key: _key, ping_url: _url, ...data } = toMonitor(changed, "");
    await appendEvent(tx, {
      org,
      area: "monitors",
      resourceId: monitor.id,
      type: `run.service.monitor.${status}.v1`,
      data,
      time: now,
    });
  }
  return changed;
}

/** `setMonitorStatus` for a monitor known by id (it may have been deleted meanwhile). */
export async function setMonitorStatusById(tx: Db, monitorId: string, status: "up" | "down", now: number) {
  const monitor = await findMonitorById(tx, monitorId);
  if (monitor) await setMonitorStatus(tx, monitor, status, now);
}
