-- Identity lists (issue 13, `npm run bench -- lists`): ZitiQL sorts `asc nulls first` (bytewise,
-- `collate "C"`), which 0007's indexes (default `nulls last`) cannot give, so every list sorted all
-- its matches; these give the default order (id) and `sort by name` (name, then id) as an index
-- scan that stops after limit + skip rows. They also answer 0007's range conditions on those
-- columns, so 0007's two are dropped.
create index identities_id_c_nulls_first on identities (id collate "C" nulls first);
create index identities_name_id_c_nulls_first on identities (name collate "C" nulls first, id collate "C" nulls first);
drop index if exists identities_id_c;
drop index if exists identities_name_c;
-- `isAdmin = false|true` (the console's admin filter) counted from a small index instead of the table.
create index identities_is_admin on identities (is_admin);

-- Role-attribute filters read the GIN index, whose pending list (fastupdate) the planner must
-- scan whole until a vacuum merges it: after many inserts it chose a sequential scan instead.
-- Written straight into the index from now on (an identity has a few attributes), and merged now.
alter index identities_role_attributes set (fastupdate = off);
select gin_clean_pending_list('identities_role_attributes'::regclass);
