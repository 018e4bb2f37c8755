-- Third-party certificate authorities (ZITI-FACTS §8.3).
create table cas (
  id text primary key,
  name text not null,
  fingerprint text not null,
  cert_pem text not null,
  is_verified boolean not null default false,
  verification_token text not null,
  is_auto_ca_enrollment_enabled boolean not null,
  is_ott_ca_enrollment_enabled boolean not null,
  is_auth_enabled boolean not null,
  identity_roles text[] not null default '{}',
  identity_name_format text not null,
  external_id_claim jsonb,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint cas_name_key unique (name),
  constraint cas_fingerprint_key unique (fingerprint)
);

-- Outstanding enrollments of identities and (later) routers. The token is a bearer secret until
-- used: it and the JWT that carries it are stored only encrypted; lookups go by its SHA-256.
create table enrollments (
  id text primary key,
  method text not null check (method in ('ott', 'ottca', 'updb', 'erott', 'trott')),
  token_hash text not null,
  token_encrypted text not null,
  jwt_encrypted text not null,
  identity_id text,
  edge_router_id text,
  transit_router_id text,
  ca_id text references cas (id) on delete cascade,
  username text,
  expires_at timestamptz not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint enrollments_token_hash_key unique (token_hash),
  constraint enrollments_one_subject check (num_nonnulls(identity_id, edge_router_id, transit_router_id) = 1),
  constraint enrollments_ottca_has_ca check (method <> 'ottca' or ca_id is not null)
);
-- One enrollment per method and identity (409 ENROLLMENT_EXISTS), one per router.
create unique index enrollments_identity_method_key on enrollments (identity_id, method) where identity_id is not null;
create unique index enrollments_edge_router_key on enrollments (edge_router_id) where edge_router_id is not null;
create unique index enrollments_transit_router_key on enrollments (transit_router_id) where transit_router_id is not null;
create index enrollments_ca on enrollments (ca_id);

-- Short-lived client certificates of API sessions (`/current-api-session/certificates`).
create table api_session_certificates (
  id text primary key,
  api_session_id text not null,
  identity_id text not null,
  subject text not null,
  fingerprint text not null,
  cert_pem text not null,
  valid_from timestamptz not null,
  valid_to timestamptz not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint api_session_certificates_fingerprint_key unique (fingerprint)
);
create index api_session_certificates_session on api_session_certificates (api_session_id);
create index api_session_certificates_identity on api_session_certificates (identity_id);
create index api_session_certificates_valid_to on api_session_certificates (valid_to);
