/** The banner of a public status page, as a table of cases (DESIGN §6 and the status-page rules). */
import { expect, test } from "bun:test";
import { bannerFor } from "../../src/status-pages/banner.ts";

const inc = (severity: string, status = "investigating") => ({ severity, status });

test.each([
  ["no active incident", [], "All Systems Operational", "green", null, false],
  ["one minor", [inc("minor")], "Degraded Performance", "amber", "minor", false],
  ["one major", [inc("major")], "Partial Outage", "amber", "major", false],
  ["one critical", [inc("critical")], "Major Outage", "red", "critical", false],
  [
    "worst wins: minor, critical, major",
    [inc("minor"), inc("critical"), inc("major")],
    "Major Outage",
    "red",
    "critical",
    false,
  ],
  ["maintenance alone", [inc("maintenance", "maintenance")], "Under Maintenance", "blue", null, true],
  [
    "a major incident in status maintenance counts as maintenance",
    [inc("major", "maintenance")],
    "Under Maintenance",
    "blue",
    null,
    true,
  ],
  [
    "maintenance beside a minor incident",
    [inc("maintenance", "maintenance"), inc("minor")],
    "Degraded Performance",
    "amber",
    "minor",
    true,
  ],
] as const)("%s", (_name, active, text, colour, severity, maintenance) => {
  expect(bannerFor([...active])).toEqual({ text, colour, severity, maintenance });
});
