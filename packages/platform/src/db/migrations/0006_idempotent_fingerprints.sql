-- Fingerprints made before this version hashed each input with its secrets (a password's SHA-256,
-- kept for a day); they are dropped with their keys. A key sent again across the upgrade is taken
-- for a new write.
delete from idempotent_requests;
