-- On-call schedules: layers are kept with the schedule as JSON (always read and written whole);
-- schedule_participants indexes who a schedule names, for the user_in_use check.

CREATE TABLE schedules (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  name TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  time_zone TEXT NOT NULL,
  team_id TEXT REFERENCES teams(id) ON DELETE SET NULL,
  layers TEXT NOT NULL,
  feed_token_hash TEXT UNIQUE,
  -- Bumped by every change that affects who is on call (an update of the schedule, an override
  -- added or deleted; not a new feed token); caches of it compare this.
  version INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX schedules_org ON schedules (org_id, id);

CREATE TABLE schedule_participants (
  schedule_id TEXT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id),
  PRIMARY KEY (schedule_id, user_id)
);
CREATE INDEX schedule_participants_user ON schedule_participants (user_id);

CREATE TABLE schedule_overrides (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  schedule_id TEXT NOT NULL REFERENCES schedules(id) ON DELETE CASCADE,
  -- No foreign key: ended overrides stay as history after their user is deleted.
  user_id TEXT NOT NULL,
  start_at INTEGER NOT NULL,
  end_at INTEGER NOT NULL,
  reason TEXT NOT NULL DEFAULT '',
  created_by TEXT NOT NULL,
  created_at INTEGER NOT NULL
);
CREATE INDEX schedule_overrides_schedule ON schedule_overrides (schedule_id, end_at);
CREATE INDEX schedule_overrides_user ON schedule_overrides (user_id, end_at);
