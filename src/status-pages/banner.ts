/**
 * The banner of a public status page: the worst severity among its active incidents. Severity
 * ranks critical > major > minor; an incident in status `maintenance` or of severity
 * `maintenance` counts only as maintenance; with none, all systems are operational.
 */
export interface Banner {
  text: string;
  colour: "red" | "amber" | "green" | "blue";
  severity: "critical" | "major" | "minor" | null;
  maintenance: boolean;
}

const RANK = { minor: 1, major: 2, critical: 3 } as const;

const BANNERS = {
  critical: { text: "Major Outage", colour: "red" },
  major: { text: "Partial Outage", colour: "amber" },
  minor: { text: "Degraded Performance", colour: "amber" },
} as const;

export function bannerFor(active: { status: string; severity: string }[]): Banner {
  let worst: "critical" | "major" | "minor" | null = null;
  let maintenance = false;
  for (const incident of active) {
    if (incident.status === "maintenance" || incident.severity === "maintenance") {
      maintenance = true;
      continue;
    }
    const severity = incident.severity as keyof typeof RANK;
    if (worst === null || RANK[severity] > RANK[worst]) worst = severity;
  }
  if (worst) return { ...BANNERS[worst], severity: worst, maintenance };
  if (maintenance) return { text: "Under Maintenance", colour: "blue", severity: null, maintenance: true };
  return { text: "All Systems Operational", colour: "green", severity: null, maintenance: false };
}
