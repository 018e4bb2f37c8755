-- Indexes for the identity list at scale (issue 13, `npm run bench -- lists`): lists sort bytewise
-- (`collate "C"`, ZitiQL's string order) by id by default or by name, `contains`/`icontains` are
-- LIKE/ILIKE patterns a trigram index answers, and role filters test the attribute array.
create extension if not exists pg_trgm;
create index identities_id_c on identities (id collate "C");
create index identities_name_c on identities (name collate "C");
create index identities_name_trgm on identities using gin (name gin_trgm_ops);
create index identities_role_attributes on identities using gin (role_attributes);
