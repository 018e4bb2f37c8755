-- The controller PKI: root, signer (intermediate) and the edge API server identity.
-- Private keys are stored only encrypted with the configuration secret (ZITI_SECRET_KEY).
create table pki_material (
  name text primary key,
  cert_pem text not null,
  key_encrypted text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
