-- Incidents (customer-facing records), their updates, and the status pages that show them.

CREATE TABLE status_pages (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  slug TEXT NOT NULL,
  title TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL,
  UNIQUE (org_id, slug)
);

CREATE TABLE incidents (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  title TEXT NOT NULL,
  status TEXT NOT NULL CHECK (status IN ('investigating', 'identified', 'monitoring', 'resolved', 'maintenance')),
  severity TEXT NOT NULL CHECK (severity IN ('critical', 'major', 'minor', 'maintenance')),
  started_at INTEGER NOT NULL,
  resolved_at INTEGER,
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX incidents_org_status ON incidents (org_id, status, id);
CREATE INDEX incidents_org ON incidents (org_id, id);

CREATE TABLE incident_monitors (
  incident_id TEXT NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  monitor_id TEXT NOT NULL REFERENCES monitors(id) ON DELETE CASCADE,
  PRIMARY KEY (incident_id, monitor_id)
);

CREATE INDEX incident_monitors_monitor ON incident_monitors (monitor_id);

CREATE TABLE incident_status_pages (
  incident_id TEXT NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  status_page_id TEXT NOT NULL REFERENCES status_pages(id) ON DELETE CASCADE,
  PRIMARY KEY (incident_id, status_page_id)
);
CREATE INDEX incident_status_pages_page ON incident_status_pages (status_page_id, incident_id);

CREATE TABLE incident_updates (
  id TEXT PRIMARY KEY,
  incident_id TEXT NOT NULL REFERENCES incidents(id) ON DELETE CASCADE,
  status TEXT NOT NULL,
  body TEXT NOT NULL,
  public INTEGER NOT NULL DEFAULT 1,
  user_id TEXT NOT NULL,
  -- JSON array of earlier versions: [{ body, public, edited_at, edited_by }]
  edit_history TEXT NOT NULL DEFAULT '[]',
  edited_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX incident_updates_incident ON incident_updates (incident_id, id);
