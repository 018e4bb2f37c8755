-- The position of the last inventory edgeRouter.* event applied to each Router identity
-- (docs/adr/0008): an older router state delivered late never overwrites a newer one.
create table router_event_positions (
  router_id text primary key,
  position bigint not null
);
