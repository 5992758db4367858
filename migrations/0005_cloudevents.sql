-- The CloudEvents plane: inbound events in the event log, consumer positions, the reply audit
-- feed, and API keys bound to a cloudevents channel.

-- Inbound events are stored once per (source, id) within an org; the same index serves the
-- lookups by (org_id, id) that deliveries make. Retention finds its cut-off by seq (rowid), so
-- the created_at index only slowed every insert down.
DROP INDEX events_org_id;
DROP INDEX events_created;
CREATE UNIQUE INDEX events_org_id_source ON events (org_id, id, source);

-- The highest seq retention has removed from an org's log: a cursor before it is 410.
CREATE TABLE event_horizons (
  org_id TEXT PRIMARY KEY REFERENCES orgs(id),
  pruned_through INTEGER NOT NULL
);

-- Server-kept positions of poll and stream consumers; the cursor names the consumer.
CREATE TABLE event_consumers (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  key_id TEXT NOT NULL,
  position INTEGER NOT NULL,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX event_consumers_updated ON event_consumers (updated_at);

-- One record per reply event the dispatcher decided on.
CREATE TABLE cloudevent_replies (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  received_at INTEGER NOT NULL,
  event_id TEXT NOT NULL,
  event_source TEXT NOT NULL,
  event_type TEXT NOT NULL,
  -- The channel the reply spoke for (its ingest token's), null for org-wide tokens and OIDC.
  channel_id TEXT,
  ingest_token_id TEXT,
  alert_id TEXT,
  outcome TEXT NOT NULL,
  reason TEXT NOT NULL
);
CREATE INDEX cloudevent_replies_org ON cloudevent_replies (org_id, received_at, id);
CREATE INDEX cloudevent_replies_outcome ON cloudevent_replies (org_id, outcome, received_at, id);
CREATE INDEX cloudevent_replies_type ON cloudevent_replies (org_id, event_type, received_at, id);
CREATE INDEX cloudevent_replies_channel ON cloudevent_replies (org_id, channel_id, received_at, id);
CREATE INDEX cloudevent_replies_alert ON cloudevent_replies (org_id, alert_id, received_at, id);
CREATE INDEX cloudevent_replies_received ON cloudevent_replies (received_at);

ALTER TABLE api_keys ADD COLUMN channel_id TEXT REFERENCES notification_channels(id);
CREATE INDEX api_keys_channel ON api_keys (channel_id) WHERE channel_id IS NOT NULL;
