import { boolean, jsonb, pgTable, text, timestamp } from 'drizzle-orm/pg-core';

const ts = (name: string) => timestamp(name, { withTimezone: true, mode: 'date' });

export const pkiMaterial = pgTable('pki_material', {
  name: text('name').primaryKey(),
  certPem: text('cert_pem').notNull(),
  keyEncrypted: text('key_encrypted'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});

export const cas = pgTable('cas', {
  id: text('id').primaryKey(),
  name: text('name').notNull(),
  fingerprint: text('fingerprint').notNull(),
  certPem: text('cert_pem').notNull(),
  isVerified: boolean('is_verified').notNull(),
  verificationToken: text('verification_token').notNull(),
  isAutoCaEnrollmentEnabled: boolean('is_auto_ca_enrollment_enabled').notNull(),
  isOttCaEnrollmentEnabled: boolean('is_ott_ca_enrollment_enabled').notNull(),
  isAuthEnabled: boolean('is_auth_enabled').notNull(),
  identityRoles: text('identity_roles').array().notNull(),
  identityNameFormat: text('identity_name_format').notNull(),
  externalIdClaim: jsonb('external_id_claim'),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});

export const enrollments = pgTable('enrollments', {
  id: text('id').primaryKey(),
  method: text('method').notNull(),
  tokenHash: text('token_hash').notNull(),
  tokenEncrypted: text('token_encrypted').notNull(),
  jwtEncrypted: text('jwt_encrypted').notNull(),
  identityId: text('identity_id'),
  edgeRouterId: text('edge_router_id'),
  transitRouterId: text('transit_router_id'),
  caId: text('ca_id'),
  username: text('username'),
  expiresAt: ts('expires_at').notNull(),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
  /** Set while `/enroll` uses the enrollment (migration 0003); not part of the entity. */
  claimedUntil: ts('claimed_until'),
});

export const apiSessionCertificates = pgTable('api_session_certificates', {
  id: text('id').primaryKey(),
  apiSessionId: text('api_session_id').notNull(),
  identityId: text('identity_id').notNull(),
  subject: text('subject').notNull(),
  fingerprint: text('fingerprint').notNull(),
  certPem: text('cert_pem').notNull(),
  validFrom: ts('valid_from').notNull(),
  validTo: ts('valid_to').notNull(),
  tags: jsonb('tags').notNull().$type<Record<string, unknown>>(),
  createdAt: ts('created_at').notNull(),
  updatedAt: ts('updated_at').notNull(),
});
