-- auth's read model of pki-enrollment's outstanding identity enrollments (docs/adr/0012): which
-- identities have one, so an identity detail asks pki-enrollment for its enrollments only then.
-- Kept from `enrollment.created|updated|deleted` and rebuilt from pki-enrollment's `enrollment`
-- states (docs/adr/0008): each row is written only over an older owner position
-- (`source_sequence`), deletions leave tombstones. Never the token or the JWT.
create table outstanding_enrollments (
  id text primary key,
  identity_id text not null,
  expires_at timestamptz not null,
  source_sequence bigint not null,
  deleted boolean not null default false,
  updated_at timestamptz not null default now()
);
create index outstanding_enrollments_identity on outstanding_enrollments (identity_id) where not deleted;

-- An auth that consumed pki-enrollment's events before this read model existed rebuilds it from
-- pki-enrollment's state at its next start (a new cursor is resynced anyway).
update event_cursors set resync_required = true
  where consumer = 'auth-from-pki-enrollment' and source = 'pki-enrollment';
