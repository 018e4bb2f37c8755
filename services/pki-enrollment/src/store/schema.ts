import { pgTable, text, timestamp } from 'drizzle-orm/pg-core';

export const pkiMaterial = pgTable('pki_material', {
  name: text('name').primaryKey(),
  certPem: text('cert_pem').notNull(),
  keyEncrypted: text('key_encrypted'),
  createdAt: timestamp('created_at', { withTimezone: true }).notNull().defaultNow(),
  updatedAt: timestamp('updated_at', { withTimezone: true }).notNull().defaultNow(),
});
