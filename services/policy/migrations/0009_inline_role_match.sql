-- Role matching that the planner can inline (docs/adr/0009): `roles_match` computed a policy's `#`
-- attributes with sub-selects for every candidate row, so Postgres called it as a function, about
-- 9 µs a row: relinking one policy over 10,000 identities took ~90 ms. Each roles column now keeps
-- its `#` attributes (without the `#`) in a generated column, and `roles_select` has no sub-select,
-- so it is inlined into the join and evaluated as plain array operators.
create function role_attributes_of(roles text[]) returns text[]
language sql immutable as $$
  select coalesce(array(select substr(r, 2) from unnest(roles) r where r like '#%' and r <> '#all' order by 1), '{}')
$$;

-- `#all`, or the entity's `@id`, or its attributes against the `#` attributes (any or all of them);
-- with no `#` attributes only the `@` entries count (ZITI-FACTS §6.2).
create function roles_select(roles text[], attributes_of_roles text[], semantic text, entity_id text, attributes text[])
returns boolean
language sql immutable as $$
  select '#all' = any(roles)
      or ('@' || entity_id) = any(roles)
      or (cardinality(attributes_of_roles) > 0
          and case when semantic = 'AnyOf' then attributes && attributes_of_roles
                   else attributes @> attributes_of_roles end)
$$;

alter table service_policies
  add column identity_role_attributes text[] generated always as (role_attributes_of(identity_roles)) stored,
  add column service_role_attributes text[] generated always as (role_attributes_of(service_roles)) stored,
  add column posture_check_role_attributes text[] generated always as (role_attributes_of(posture_check_roles)) stored;
alter table edge_router_policies
  add column identity_role_attributes text[] generated always as (role_attributes_of(identity_roles)) stored,
  add column edge_router_role_attributes text[] generated always as (role_attributes_of(edge_router_roles)) stored;
alter table service_edge_router_policies
  add column service_role_attributes text[] generated always as (role_attributes_of(service_roles)) stored,
  add column edge_router_role_attributes text[] generated always as (role_attributes_of(edge_router_roles)) stored;

drop function roles_match(text[], text, text, text[]);
