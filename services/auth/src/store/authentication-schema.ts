import { boolean, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

/** Tables of migration 0002 (auth policies live in schema.ts since 0001). */
const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const externalJwtSigners = pgTable('external_jwt_signers', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  enabled: boolean('enabled').notNull(),
  issuer: text('issuer').notNull(),
  audience: text('audience'),
  certPem: text('cert_pem'),
  fingerprint: text('fingerprint'),
  commonName: text('common_name'),
  notBefore: ts('not_before'),
  notAfter: ts('not_after'),
  kid: text('kid'),
  jwksEndpoint: text('jwks_endpoint'),
  claimsProperty: text('claims_property'),
  useExternalId: boolean('use_external_id').notNull(),
  externalAuthUrl: text('external_auth_url'),
  clientId: text('client_id'),
  scopes: text('scopes').array().notNull(),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const mfa = pgTable('mfa', {
  id: text('id').primaryKey(),
  identityId: text('identity_id').notNull(),
  isVerified: boolean('is_verified').notNull(),
  secret: text('secret').notNull(),
  recoveryCodes: text('recovery_codes').notNull(),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const updbFailedAttempts = pgTable('updb_failed_attempts', {
  authenticatorId: text('authenticator_id').primaryKey(),
  attempts: integer('attempts').notNull(),
  lastFailedAt: ts('last_failed_at').notNull(),
});

export const identityTraces = pgTable('identity_traces', {
  identityId: text('identity_id').primaryKey(),
  enabled: boolean('enabled').notNull(),
  traceId: text('trace_id'),
  until: ts('until'),
  channels: text('channels').array().notNull(),
  updatedAt: ts('updated_at').notNull(),
});
