-- Read model of inventory's router presence (`routerPresence.changed`, docs/adr/0023): what the
-- controller believes of each router's control connection, kept like every read model (the owner's
-- full state applied by position, rebuilt from inventory's `routerPresence` states on a resync). The
-- reads that show routers (sessions' edge routers, the client's router lists, the related-router
-- lists, the policy advice) join it by router id; a router without a row has never connected.
-- Nothing is derived from it, and no resync is asked for: no router was connected before it existed.
create table router_presence (
  id text primary key,
  is_online boolean not null default false,
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);
