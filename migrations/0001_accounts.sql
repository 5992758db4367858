-- Organizations, users, teams, API keys, ingest tokens, the email outbox and idempotency records.
-- Timestamps are epoch milliseconds (INTEGER); booleans are 0/1.

CREATE TABLE orgs (
  id TEXT PRIMARY KEY,
  name TEXT NOT NULL,
  slug TEXT NOT NULL UNIQUE,
  plan TEXT NOT NULL CHECK (plan IN ('free', 'pro', 'enterprise')),
  settings TEXT NOT NULL DEFAULT '{}',
  settings_version INTEGER NOT NULL DEFAULT 1,
  created_at INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);

CREATE TABLE users (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  email TEXT NOT NULL,
  name TEXT NOT NULL DEFAULT '',
  role TEXT NOT NULL CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
  status TEXT NOT NULL CHECK (status IN ('invited', 'active', 'suspended')),
  -- Set once the user accepted the invite; a suspended user without it goes back to invited.
  signed_up_at INTEGER,
  password_hash TEXT,
  totp_secret TEXT,
  mfa_enabled INTEGER NOT NULL DEFAULT 0,
  -- Bumped on suspend and password change: session JWTs carry it and die with it.
  session_version INTEGER NOT NULL DEFAULT 1,
  invite_token_hash TEXT UNIQUE,
  invite_expires_at INTEGER,
  reset_token_hash TEXT UNIQUE,
  reset_expires_at INTEGER,
  created_at INTEGER NOT NULL,
  last_login_at INTEGER,
  UNIQUE (org_id, email)
);
CREATE INDEX users_email ON users (email);
CREATE UNIQUE INDEX users_one_owner ON users (org_id) WHERE role = 'owner';

CREATE TABLE teams (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  UNIQUE (org_id, name)
);

CREATE TABLE team_members (
  team_id TEXT NOT NULL REFERENCES teams(id) ON DELETE CASCADE,
  user_id TEXT NOT NULL REFERENCES users(id) ON DELETE CASCADE,
  PRIMARY KEY (team_id, user_id)
);
CREATE INDEX team_members_user ON team_members (user_id);

CREATE TABLE api_keys (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  user_id TEXT REFERENCES users(id) ON DELETE SET NULL,
  service INTEGER NOT NULL DEFAULT 0,
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  secret_hash TEXT NOT NULL UNIQUE,
  scopes TEXT NOT NULL,
  expires_at INTEGER,
  revoked_at INTEGER,
  last_used_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX api_keys_org ON api_keys (org_id, id);

CREATE TABLE ingest_tokens (
  id TEXT PRIMARY KEY,
  org_id TEXT NOT NULL REFERENCES orgs(id),
  name TEXT NOT NULL,
  prefix TEXT NOT NULL,
  token_hash TEXT NOT NULL UNIQUE,
  channel_id TEXT,
  revoked_at INTEGER,
  created_at INTEGER NOT NULL
);
CREATE INDEX ingest_tokens_org ON ingest_tokens (org_id, id);

CREATE TABLE email_outbox (
  id TEXT PRIMARY KEY,
  org_id TEXT REFERENCES orgs(id),
  recipient TEXT NOT NULL,
  subject TEXT NOT NULL,
  -- Bodies may hold single-use links: they are cleared once the message is sent.
  text_body TEXT,
  html_body TEXT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'sent', 'dead')),
  attempts INTEGER NOT NULL DEFAULT 0,
  next_attempt_at INTEGER NOT NULL,
  last_error TEXT,
  created_at INTEGER NOT NULL,
  sent_at INTEGER
);
CREATE INDEX email_outbox_due ON email_outbox (next_attempt_at) WHERE status = 'pending';

CREATE TABLE idempotency_records (
  principal TEXT NOT NULL,
  idempotency_key TEXT NOT NULL,
  request_hash TEXT NOT NULL,
  status INTEGER NOT NULL,
  body TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  PRIMARY KEY (principal, idempotency_key)
);
CREATE INDEX idempotency_records_created ON idempotency_records (created_at);

CREATE INDEX api_keys_prefix ON api_keys (prefix);
