-- Auth policies, external JWT signers, MFA, updb lockout counters and identity traces.

create table external_jwt_signers (
  id text primary key,
  name text not null,
  enabled boolean not null,
  issuer text not null,
  audience text,
  cert_pem text,
  fingerprint text,
  common_name text,
  not_before timestamptz,
  not_after timestamptz,
  kid text,
  jwks_endpoint text,
  claims_property text,
  use_external_id boolean not null default false,
  external_auth_url text,
  client_id text,
  scopes text[] not null default '{}',
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint external_jwt_signers_name_key unique (name),
  constraint external_jwt_signers_issuer_key unique (issuer),
  constraint external_jwt_signers_kid_key unique (kid),
  -- A signer is a certificate with its kid, or a JWKS endpoint (seed §2.11).
  constraint external_jwt_signers_key_source check ((cert_pem is null) <> (jwks_endpoint is null)),
  constraint external_jwt_signers_cert_kid check (cert_pem is null or kid is not null)
);

-- One MFA record per identity. The TOTP secret and the recovery codes are SecretBox tokens bound
-- to the identity (context `mfa:<identityId>`), never stored in clear.
create table mfa (
  id text primary key,
  identity_id text not null references identities (id) on delete cascade,
  is_verified boolean not null default false,
  secret text not null,
  recovery_codes text not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint mfa_identity_key unique (identity_id)
);

-- Consecutive failed password attempts of an updb authenticator (auth policy maxAttempts).
create table updb_failed_attempts (
  authenticator_id text primary key references authenticators (id) on delete cascade,
  attempts integer not null,
  last_failed_at timestamptz not null default now()
);

-- `PUT /identities/{id}/trace`: the last trace specification set for an identity.
create table identity_traces (
  identity_id text primary key references identities (id) on delete cascade,
  enabled boolean not null,
  trace_id text,
  until timestamptz,
  channels text[] not null default '{}',
  updated_at timestamptz not null default now()
);

create index identities_auth_policy on identities (auth_policy_id);
