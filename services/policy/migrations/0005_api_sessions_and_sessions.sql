-- API sessions as auth announces them (apiSession.created / mfaPassed / deleted / expired), kept while
-- they live: edge sessions and posture data belong to one and end with it (ZITI-FACTS §10.1, §6.3).
-- API sessions live in Redis at auth, so there is no owner state to rebuild from; an API session
-- this model missed (created before policy first started) is learnt from its first request here.
create table api_sessions (
  id text primary key,
  identity_id text not null,
  auth_method text not null default '',
  is_mfa_required boolean not null default false,
  is_mfa_complete boolean not null default false,
  -- When the session last passed MFA (login or enrollment), for MFA posture checks.
  mfa_passed_at timestamptz,
  created_at timestamptz not null,
  -- Set once auth announced its end; the row stays (briefly) so a late created/mfaPassed is a no-op.
  ended_at timestamptz
);
create index api_sessions_identity on api_sessions (identity_id);
create index api_sessions_ended on api_sessions (ended_at) where ended_at is not null;

-- Edge sessions (ZITI-FACTS §10.1): one per API session, service and type; the token is a random
-- uuid the routers check (stored as issued, as the reference does, since the router needs it).
create table sessions (
  id text primary key,
  token text not null unique,
  api_session_id text not null,
  identity_id text not null,
  service_id text not null,
  type text not null check (type in ('Dial', 'Bind')),
  tags jsonb not null default '{}',
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index sessions_per_api_session on sessions (api_session_id, service_id, type);
create index sessions_identity on sessions (identity_id);
create index sessions_service on sessions (service_id);

-- Refused session creations for posture (`/identities/{id}/failed-service-requests`): bounded per identity.
create table failed_service_requests (
  id bigserial primary key,
  identity_id text not null,
  api_session_id text not null,
  service_id text not null,
  service_name text not null,
  session_type text not null,
  policy_failures jsonb not null,
  created_at timestamptz not null
);
create index failed_service_requests_identity on failed_service_requests (identity_id, id desc);
