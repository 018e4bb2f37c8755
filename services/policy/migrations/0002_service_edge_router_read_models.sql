-- Read models of inventory's services and edge routers, kept from service.* and edgeRouter.*
-- events exactly like the identity read model: a row is applied only when the event's sequence is
-- newer than the one stored, and a deletion leaves a tombstone.
create table services (
  id text primary key,
  name text not null,
  role_attributes text[] not null default '{}',
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);
create index services_live_roles on services using gin (role_attributes) where not deleted;

create table edge_routers (
  id text primary key,
  name text not null,
  role_attributes text[] not null default '{}',
  is_tunneler_enabled boolean not null default false,
  is_verified boolean not null default false,
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);
create index edge_routers_live_roles on edge_routers using gin (role_attributes) where not deleted;
