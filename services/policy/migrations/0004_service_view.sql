-- What an identity's service list needs besides access (ZITI-FACTS §10.2, §10.3): read models of
-- inventory's configs, config types and identity service config overrides (kept from their events
-- like every read model: applied by position, tombstones on delete), and when each identity's view
-- of its services last changed.
create table configs (
  id text primary key,
  name text not null,
  config_type_id text not null,
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);
create index configs_type on configs (config_type_id) where not deleted;

create table config_types (
  id text primary key,
  name text not null,
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);

-- One row per identity with overrides (id = identity id); its state lists {serviceId, configId}.
create table identity_service_configs (
  id text primary key,
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);

-- Services that use a config (`state.configs` holds config ids).
create index services_configs on services using gin ((state -> 'configs')) where not deleted;

-- When something that changes an identity's services last changed (access gained, lost or
-- changed; a service, config, config type or override it sees); `*` records any change at all
-- (administrators see every service). `GET /current-api-session/service-updates` answers it.
create table identity_service_updates (
  identity_id text primary key,
  changed_at timestamptz not null
);

-- The new read models fill themselves from inventory's state on the next start (docs/adr/0008).
update event_cursors set resync_required = true where source = 'inventory';
