-- The config types an API session asked for at login (ids, or `all`): a client service list without
-- `configTypes` answers the configs of these (ZITI-FACTS §3.4, §10.3).
alter table api_sessions add column config_types text[] not null default '{}';
