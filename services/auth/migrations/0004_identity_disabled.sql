-- `disabled` as last recorded, so an identity's state (and its events) is a function of stored
-- data: set by a disable, cleared by an enable or, once `disabled_until` passed, by auth's sweeper,
-- which publishes the change. Every identity disabled so far starts as disabled, so the sweeper
-- also announces the timed disables that already ended (read models kept them disabled).
alter table identities add column disabled boolean not null default false;
update identities set disabled = true where disabled_at is not null;
create index identities_disable_lapse on identities (disabled_until) where disabled and disabled_until is not null;
