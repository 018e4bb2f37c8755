-- An enrollment being used: `/enroll` claims it (until this time) in a short transaction of its
-- own, asks the owner of the credential (auth, or inventory for routers) with no transaction open,
-- then deletes it, or releases the claim when that failed. A claim that outlives its time (the
-- replica died) lapses and the token works again. A router's new enrollment waits for a live claim
-- of its current one to end (docs/adr/0007).
alter table enrollments add column claimed_until timestamptz;
