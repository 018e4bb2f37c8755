-- Policies (ZITI-FACTS §6, §12.6) and the access derived from them (docs/adr/0009).
-- Role arrays are stored sorted, as the API returns them.
create table service_policies (
  id text primary key,
  name text not null,
  type text not null check (type in ('Dial', 'Bind')),
  semantic text not null check (semantic in ('AllOf', 'AnyOf')),
  identity_roles text[] not null default '{}',
  service_roles text[] not null default '{}',
  posture_check_roles text[] not null default '{}',
  tags jsonb not null default '{}',
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index service_policies_name on service_policies (name);

create table edge_router_policies (
  id text primary key,
  name text not null,
  semantic text not null check (semantic in ('AllOf', 'AnyOf')),
  identity_roles text[] not null default '{}',
  edge_router_roles text[] not null default '{}',
  is_system boolean not null default false,
  tags jsonb not null default '{}',
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index edge_router_policies_name on edge_router_policies (name);

create table service_edge_router_policies (
  id text primary key,
  name text not null,
  semantic text not null check (semantic in ('AllOf', 'AnyOf')),
  service_roles text[] not null default '{}',
  edge_router_roles text[] not null default '{}',
  tags jsonb not null default '{}',
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index service_edge_router_policies_name on service_edge_router_policies (name);

-- Whether an entity (id, role attributes) is selected by a policy's roles with its semantic
-- (ZITI-FACTS §6.2): `#all`, or its `@id`, or its attributes against the `#` roles (any or all of
-- them); with no `#` roles only the `@` entries count.
create function roles_match(roles text[], semantic text, entity_id text, attributes text[]) returns boolean
language sql immutable as $$
  select '#all' = any(roles)
      or ('@' || entity_id) = any(roles)
      or (exists (select 1 from unnest(roles) r where r like '#%')
          and case when semantic = 'AnyOf'
                then attributes && array(select substr(r, 2) from unnest(roles) r where r like '#%')
                else attributes @> array(select substr(r, 2) from unnest(roles) r where r like '#%')
              end)
$$;

-- Which live entities each policy selects (derived; rebuilt for an entity or a policy whenever it
-- changes, under one lock, so they never drift).
create table service_policy_identities (
  policy_id text not null,
  identity_id text not null,
  primary key (policy_id, identity_id)
);
create index service_policy_identities_identity on service_policy_identities (identity_id);
create table service_policy_services (
  policy_id text not null,
  service_id text not null,
  primary key (policy_id, service_id)
);
create index service_policy_services_service on service_policy_services (service_id);
create table edge_router_policy_identities (
  policy_id text not null,
  identity_id text not null,
  primary key (policy_id, identity_id)
);
create index edge_router_policy_identities_identity on edge_router_policy_identities (identity_id);
create table edge_router_policy_edge_routers (
  policy_id text not null,
  edge_router_id text not null,
  primary key (policy_id, edge_router_id)
);
create index edge_router_policy_edge_routers_router on edge_router_policy_edge_routers (edge_router_id);
create table service_edge_router_policy_services (
  policy_id text not null,
  service_id text not null,
  primary key (policy_id, service_id)
);
create index service_edge_router_policy_services_service on service_edge_router_policy_services (service_id);
create table service_edge_router_policy_edge_routers (
  policy_id text not null,
  edge_router_id text not null,
  primary key (policy_id, edge_router_id)
);
create index service_edge_router_policy_edge_routers_router on service_edge_router_policy_edge_routers (edge_router_id);

-- Access (derived from the links): what each identity may dial or bind, which edge routers each
-- identity and each service may use. Pages of these are the "what can X reach" lists.
create table identity_services (
  identity_id text not null,
  service_id text not null,
  dial boolean not null,
  bind boolean not null,
  primary key (identity_id, service_id)
);
create index identity_services_service on identity_services (service_id);
create table identity_edge_routers (
  identity_id text not null,
  edge_router_id text not null,
  primary key (identity_id, edge_router_id)
);
create index identity_edge_routers_router on identity_edge_routers (edge_router_id);
create table service_edge_routers (
  service_id text not null,
  edge_router_id text not null,
  primary key (service_id, edge_router_id)
);
create index service_edge_routers_router on service_edge_routers (edge_router_id);
