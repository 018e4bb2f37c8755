-- The router edge (fabric, docs/adr/0023) holds the control channels of routers and reports them
-- here; inventory owns what the controller believes of each router's connection.

-- A router's presence: the connection it was last known by, as fabric reported it. One row per
-- router that ever connected (none: it never did, `SYNC_UNKNOWN`). A report of an older
-- connection never replaces a newer one; the replica holding the connection renews its lease, and
-- a lease that lapses (the replica died) turns the router offline. hostname and
-- supported_protocols are '' and {} while offline; version_info is the last one announced.
create table router_presence (
  router_id text primary key references routers (id) on delete cascade,
  connection_id text not null,
  replica_id text not null,
  connected_at timestamptz not null,
  lease_until timestamptz not null,
  is_online boolean not null,
  hostname text not null default '',
  supported_protocols jsonb not null default '{}',
  version_info jsonb,
  sync_status text not null,
  -- When what a reader sees (online, hostname, protocols, version, sync status) last changed.
  changed_at timestamptz not null default now()
);
-- The lapse sweep reads the online presences by lease.
create index router_presence_lease on router_presence (lease_until) where is_online;

-- What the hosting SDK gave at bind (its public key for end-to-end encryption), key → base64.
alter table terminators add column peer_data jsonb not null default '{}';
