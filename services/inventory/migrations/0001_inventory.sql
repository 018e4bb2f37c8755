-- inventory owns the network's things (DESIGN §2): config types, configs, services, routers
-- (edge and transit in one table, one name index as in the reference), terminators and the
-- per-identity service config overrides. Identity ids belong to auth and router enrollments to
-- pki-enrollment; neither is a foreign key here.

create table config_types (
  id text primary key,
  name text not null,
  schema jsonb not null default '{}',
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint config_types_name_key unique (name)
);

create table configs (
  id text primary key,
  name text not null,
  config_type_id text not null,
  data jsonb not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint configs_name_key unique (name),
  constraint configs_config_type_fkey foreign key (config_type_id) references config_types (id)
);
create index configs_config_type on configs (config_type_id);

create table services (
  id text primary key,
  name text not null,
  terminator_strategy text not null,
  role_attributes text[] not null default '{}',
  encryption_required boolean not null,
  max_idle_time_millis bigint not null default 0,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint services_name_key unique (name)
);
create index services_role_attributes on services using gin (role_attributes);

-- A service's configs, in the order given; at most one per config type (checked by the domain).
create table service_configs (
  service_id text not null references services (id) on delete cascade,
  config_id text not null references configs (id) on delete cascade,
  position integer not null,
  primary key (service_id, config_id)
);
create index service_configs_config on service_configs (config_id);

create table routers (
  id text primary key,
  kind text not null check (kind in ('edge', 'transit')),
  name text not null,
  cost integer not null default 0 check (cost between 0 and 65535),
  no_traversal boolean not null default false,
  disabled boolean not null default false,
  is_verified boolean not null default false,
  is_tunneler_enabled boolean not null default false,
  fingerprint text,
  cert_pem text,
  unverified_fingerprint text,
  unverified_cert_pem text,
  role_attributes text[] not null default '{}',
  app_data jsonb not null default '{}',
  hostname text not null default '',
  supported_protocols jsonb not null default '{}',
  version_info jsonb,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint routers_name_key unique (name)
);
create unique index routers_fingerprint_key on routers (fingerprint) where fingerprint is not null;
create index routers_kind on routers (kind);
create index routers_role_attributes on routers using gin (role_attributes);

create table terminators (
  id text primary key,
  service_id text not null references services (id) on delete cascade,
  router_id text not null references routers (id) on delete cascade,
  binding text not null,
  address text not null,
  instance_id text not null default '',
  -- SHA-256 of the identity secret: routers prove it, nobody reads it back.
  instance_secret_hash text,
  cost integer not null default 0 check (cost between 0 and 65535),
  precedence text not null default 'default' check (precedence in ('default', 'required', 'failed')),
  host_id text not null default '',
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index terminators_service on terminators (service_id);
create index terminators_router on terminators (router_id);

-- An identity's override of a service's config of one type (ZITI-FACTS §10.3).
create table identity_service_configs (
  identity_id text not null,
  service_id text not null references services (id) on delete cascade,
  config_type_id text not null,
  config_id text not null,
  primary key (identity_id, service_id, config_type_id),
  constraint identity_service_configs_config_fkey foreign key (config_id) references configs (id)
);
create index identity_service_configs_config on identity_service_configs (config_id);

-- First-start data written once (a deleted built-in config type stays deleted).
create table seeds (
  name text primary key,
  applied_at timestamptz not null default now()
);

-- The one data-integrity job of the cluster (check or fix); a lease lets another replica take
-- over when the one running it dies.
create table integrity_job (
  id integer primary key check (id = 1),
  in_progress boolean not null default false,
  fixing boolean not null default false,
  started_at timestamptz,
  ended_at timestamptz,
  error text,
  too_many_errors boolean not null default false,
  results jsonb not null default '[]',
  lease_owner text,
  lease_until timestamptz
);
insert into integrity_job (id) values (1);

-- Cluster-wide rate limits (database snapshots: at most one a minute).
create table rate_limits (
  name text primary key,
  last_at timestamptz not null
);
