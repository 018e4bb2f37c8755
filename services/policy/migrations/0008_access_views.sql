-- Access is read from the links instead of being stored (docs/adr/0011): an identity's services are
-- the services of the service policies that select it, joined when read. Storing every pair made a
-- policy that selects everything write identities × services rows (10 million in a network of
-- 10,000 identities and 1,000 services) in one transaction; the links of that policy are
-- identities + services rows. Each view groups by its two ids, so a condition on either (an
-- identity's services, a service's identities) is applied to the links before they are joined.
--
-- A service's link to a service policy keeps the policy's type as linked: access read while a policy
-- is being changed or deleted (its row already written or gone, its links not yet) is the access as
-- linked, which is what a derivation compares against.
alter table service_policy_services add column type text;
update service_policy_services ps set type = p.type from service_policies p where p.id = ps.policy_id;
delete from service_policy_services where type is null;
alter table service_policy_services alter column type set not null;
alter table service_policy_services add constraint service_policy_services_type check (type in ('Dial', 'Bind'));

drop table identity_services;
drop table identity_edge_routers;
drop table service_edge_routers;

create view identity_services as
  select pi.identity_id, ps.service_id, bool_or(ps.type = 'Dial') as dial, bool_or(ps.type = 'Bind') as bind
    from service_policy_identities pi
    join service_policy_services ps on ps.policy_id = pi.policy_id
   group by pi.identity_id, ps.service_id;

create view identity_edge_routers as
  select pi.identity_id, pr.edge_router_id
    from edge_router_policy_identities pi
    join edge_router_policy_edge_routers pr on pr.policy_id = pi.policy_id
   group by pi.identity_id, pr.edge_router_id;

create view service_edge_routers as
  select ps.service_id, pr.edge_router_id
    from service_edge_router_policy_services ps
    join service_edge_router_policy_edge_routers pr on pr.policy_id = ps.policy_id
   group by ps.service_id, pr.edge_router_id;
