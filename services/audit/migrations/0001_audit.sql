-- The audit trail (issue 24): one record per entity change made through an API and per authentication
-- attempt, made from the entity owners' events. A record is keyed by the event it was made from
-- (`<source>:<position>`): an event applied twice (a redelivery, a parked event retried) makes one record.
create table audit_records (
  id text primary key,
  event_id text not null,
  at timestamptz not null,
  -- change | authentication
  category text not null,
  -- `<api>.<operationId>`
  operation text not null,
  method text,
  request_id text not null,
  remote_address text,
  actor_id text,
  actor_name text,
  api_session_id text,
  entity_type text,
  entity_id text,
  entity_name text,
  -- created | updated | deleted (a change); succeeded | failed (an authentication)
  action text not null,
  -- field → {before, after}: secrets never, certificates as fingerprints
  changes jsonb,
  auth_method text,
  reason text,
  recorded_at timestamptz not null default now(),
  constraint audit_records_event_id_key unique (event_id)
);
-- The default order (newest first) and the retention sweep (oldest first).
create index audit_records_at on audit_records (at, id);
-- The filters an operator reaches for: who, what, which request, which kind.
create index audit_records_actor on audit_records (actor_id, at);
create index audit_records_entity on audit_records (entity_id, at);
create index audit_records_entity_type on audit_records (entity_type, at);
create index audit_records_request on audit_records (request_id);
create index audit_records_session on audit_records (api_session_id);
create index audit_records_category on audit_records (category, action, at);
create index audit_records_operation on audit_records (operation, at);

-- The last state of every entity the owners announce, to tell what a change changed (before/after) and
-- who an actor is (identities' names). A read model (docs/adr/0008): each row is written only over an older
-- position of its source, deletions are kept as tombstones until no older event can arrive.
create table entity_states (
  -- the management API's collection name: identities, services, servicePolicies, …
  entity_type text not null,
  id text not null,
  -- the owner that announces it (its positions order the row's writes)
  source text not null,
  state jsonb not null,
  deleted boolean not null default false,
  source_sequence bigint not null,
  updated_at timestamptz not null default now(),
  primary key (entity_type, id)
);
create index entity_states_tombstones on entity_states (source, updated_at) where deleted;
