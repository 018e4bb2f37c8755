-- Posture (ZITI-FACTS §6.3, §7.3): the fixed posture check types, the posture checks administrators
-- define, which checks each service policy names (derived), and the posture data clients report.

-- The fixed records of the reference's `addPostureCheckTypes` / `addProcessMultiPostureCheck`
-- (operating systems in the order the reference reads them back: by type, byte order).
create table posture_check_types (
  id text primary key,
  name text not null,
  operating_systems jsonb not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index posture_check_types_name on posture_check_types (name);
insert into posture_check_types (id, name, operating_systems) values
  ('OS', 'Operating System Check', '[
     {"type":"Android","versions":["9","10","11"]},
     {"type":"Linux","versions":["4.14","4.19","5.4","5.9"]},
     {"type":"Windows","versions":["Vista","7","8","10","2000"]},
     {"type":"iOS","versions":["11","12"]},
     {"type":"macOS","versions":["10.15","11.0"]}]'),
  ('PROCESS', 'Process Check', '[
     {"type":"Linux","versions":["4.14","4.19","5.4","5.9"]},
     {"type":"Windows","versions":["Vista","7","8","10","2000"]},
     {"type":"macOS","versions":["10.15","11.0"]}]'),
  ('DOMAIN', 'Windows Domain Check', '[
     {"type":"Windows","versions":["Vista","7","8","10","2000"]}]'),
  ('MAC', 'MAC Address Check', '[
     {"type":"Android","versions":["9","10","11"]},
     {"type":"Linux","versions":["4.14","4.19","5.4","5.9"]},
     {"type":"Windows","versions":["Vista","7","8","10","2000"]},
     {"type":"macOS","versions":["10.15","11.0"]}]'),
  ('PROCESS_MULTI', 'Process Multi Check', '[
     {"type":"Linux","versions":[]},
     {"type":"Windows","versions":[]},
     {"type":"macOS","versions":[]}]');

-- Posture checks of every type; `data` holds the type's own fields as the API shows them
-- (operatingSystems | macAddresses | domains | process | processes + semantic | the MFA properties).
create table posture_checks (
  id text primary key,
  name text not null,
  type_id text not null check (type_id in ('OS', 'PROCESS', 'DOMAIN', 'MAC', 'MFA', 'PROCESS_MULTI')),
  version bigint not null default 1,
  role_attributes text[] not null default '{}',
  data jsonb not null,
  tags jsonb not null default '{}',
  created_at timestamptz not null,
  updated_at timestamptz not null
);
create unique index posture_checks_name on posture_checks (name);
create index posture_checks_role_attributes on posture_checks using gin (role_attributes);

-- Which posture checks each service policy names (derived from postureCheckRoles and the checks'
-- role attributes with roles_match, under the derivation lock, like every link table: ADR 0009).
create table service_policy_posture_checks (
  policy_id text not null,
  posture_check_id text not null,
  primary key (policy_id, posture_check_id)
);
create index service_policy_posture_checks_check on service_policy_posture_checks (posture_check_id);

-- What an identity's clients reported (OS, MAC, DOMAIN, PROCESS responses): kept per identity as the
-- reference keeps them (the last of each kind; processes per reported check id and path), with the
-- API session that reported it and when.
create table identity_posture_responses (
  identity_id text not null,
  kind text not null check (kind in ('OS', 'MAC', 'DOMAIN', 'PROCESS')),
  -- PROCESS: the posture check id the response names; '' for the other kinds.
  check_key text not null default '',
  -- PROCESS: the process path; '' for the other kinds.
  path text not null default '',
  posture_check_id text not null,
  api_session_id text not null,
  data jsonb not null,
  reported_at timestamptz not null,
  primary key (identity_id, kind, check_key, path)
);

-- What belongs to one API session (ENDPOINT_STATE responses): forgotten when the API session ends.
create table api_session_posture (
  api_session_id text primary key,
  identity_id text not null,
  woken_at timestamptz,
  unlocked_at timestamptz,
  updated_at timestamptz not null
);
create index api_session_posture_identity on api_session_posture (identity_id);
