-- Read model of auth's identities, kept from identity.* events. A row is applied only when the
-- event's sequence is newer than the one stored, and a deletion leaves a tombstone, so events
-- applied late or twice never resurrect or roll back an identity.
create table identities (
  id text primary key,
  name text not null,
  type_id text not null,
  is_admin boolean not null,
  role_attributes text[] not null default '{}',
  state jsonb not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);
create index identities_live_roles on identities using gin (role_attributes) where not deleted;
