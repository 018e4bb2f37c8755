import { boolean, integer, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const identityTypes = pgTable('identity_types', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const authPolicies = pgTable('auth_policies', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  isSystem: boolean('is_system').notNull().default(false),
  primary: jsonb('primary').notNull(),
  secondary: jsonb('secondary').notNull(),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull().defaultNow(),
  updatedAt: ts('updated_at').notNull().defaultNow(),
});

export const identities = pgTable('identities', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  typeId: text('type_id').notNull(),
  isAdmin: boolean('is_admin').notNull(),
  isDefaultAdmin: boolean('is_default_admin').notNull(),
  roleAttributes: text('role_attributes').array().notNull(),
  externalId: text('external_id'),
  authPolicyId: text('auth_policy_id').notNull(),
  disabled: boolean('disabled').notNull().default(false),
  disabledAt: ts('disabled_at'),
  disabledUntil: ts('disabled_until'),
  defaultHostingPrecedence: text('default_hosting_precedence'),
  defaultHostingCost: integer('default_hosting_cost').notNull(),
  serviceHostingCosts: jsonb('service_hosting_costs').notNull().$type<Record<string, number>>(),
  serviceHostingPrecedences: jsonb('service_hosting_precedences').notNull().$type<Record<string, string>>(),
  appData: jsonb('app_data').notNull().$type<Record<string, unknown>>(),
  envInfo: jsonb('env_info').notNull().$type<Record<string, unknown>>(),
  sdkInfo: jsonb('sdk_info').notNull().$type<Record<string, unknown>>(),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const authenticators = pgTable('authenticators', {
  id: text('id').primaryKey(),
  identityId: text('identity_id').notNull(),
  method: text('method').notNull().$type<'updb' | 'cert'>(),
  username: text('username'),
  passwordHash: text('password_hash'),
  salt: text('salt'),
  certFingerprint: text('cert_fingerprint'),
  certPem: text('cert_pem'),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

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

export type IdentityRow = typeof identities.$inferSelect;
export type AuthenticatorRow = typeof authenticators.$inferSelect;
