create table identity_types (
  id text primary key,
  name text not null unique,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table auth_policies (
  id text primary key,
  name text not null unique,
  is_system boolean not null default false,
  "primary" jsonb not null,
  secondary jsonb not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);

create table identities (
  id text primary key,
  name text not null,
  type_id text not null references identity_types (id),
  is_admin boolean not null default false,
  is_default_admin boolean not null default false,
  role_attributes text[] not null default '{}',
  external_id text,
  auth_policy_id text not null references auth_policies (id),
  disabled_at timestamptz,
  disabled_until timestamptz,
  default_hosting_precedence text,
  default_hosting_cost integer not null default 0,
  service_hosting_costs jsonb not null default '{}',
  service_hosting_precedences jsonb not null default '{}',
  app_data jsonb not null default '{}',
  env_info jsonb not null default '{}',
  sdk_info jsonb not null default '{}',
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint identities_name_key unique (name),
  constraint identities_external_id_key unique (external_id)
);
create unique index identities_one_default_admin on identities (is_default_admin) where is_default_admin;

create table authenticators (
  id text primary key,
  identity_id text not null references identities (id) on delete cascade,
  method text not null check (method in ('updb', 'cert')),
  username text,
  password_hash text,
  salt text,
  cert_fingerprint text,
  cert_pem text,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  constraint authenticators_identity_method_key unique (identity_id, method),
  constraint authenticators_username_key unique (username),
  constraint authenticators_cert_fingerprint_key unique (cert_fingerprint)
);
create index authenticators_identity on authenticators (identity_id);
