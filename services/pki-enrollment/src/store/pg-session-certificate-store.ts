import { ApiError } from '@ziti/contracts';
import { type Db, date, json, listRows, queryRows, toListPage, withUniqueFields } from '@ziti/platform';
import { and, eq, gt, lte, sql } from 'drizzle-orm';
import type { ListInput, ListPage, SessionCertificate } from '../domain/model.ts';
import type { SessionCertificateStore } from '../domain/ports.ts';
import type { Row } from './pg-store-helpers.ts';
import { sessionCertificateQuery } from './query-entities.ts';
import { apiSessionCertificates } from './schema.ts';

/** Maps a raw (snake_case) api_session_certificates row: every read of one is SQL. */
function sessionCertificateFromRow(r: Row): SessionCertificate {
  return {
    id: String(r.id),
    apiSessionId: String(r.api_session_id),
    identityId: String(r.identity_id),
    subject: String(r.subject),
    fingerprint: String(r.fingerprint),
    certPem: String(r.cert_pem),
    validFrom: date(r.valid_from),
    validTo: date(r.valid_to),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

export class PgSessionCertificateStore implements SessionCertificateStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(id: string, apiSessionId: string): Promise<SessionCertificate | null> {
    const [row] = await queryRows<Row>(
      this.db,
      'select * from api_session_certificates where id = $1 and api_session_id = $2 and valid_to > $3',
      [id, apiSessionId, this.now().toISOString()],
    );
    return row ? sessionCertificateFromRow(row) : null;
  }

  async list(input: ListInput, apiSessionId: string): Promise<ListPage<SessionCertificate>> {
    const scope = {
      sql: 's.api_session_id = $1 and s.valid_to > $2',
      params: [apiSessionId, this.now().toISOString()],
    };
    return toListPage(
      await listRows<Row>(this.db, sessionCertificateQuery, input, { scope }),
      sessionCertificateFromRow,
    );
  }

  async countBySession(apiSessionId: string): Promise<number> {
    const rows = await this.db
      .select({ n: sql<number>`count(*)::int` })
      .from(apiSessionCertificates)
      .where(
        and(eq(apiSessionCertificates.apiSessionId, apiSessionId), gt(apiSessionCertificates.validTo, this.now())),
      );
    return Number(rows[0]?.n ?? 0);
  }

  async insert(c: SessionCertificate): Promise<void> {
    await withUniqueFields(() => this.db.insert(apiSessionCertificates).values(c), {
      api_session_certificates_fingerprint_key: {
        field: 'certPem',
        store: 'apiSessionCertificates',
        value: c.fingerprint,
        error: (fingerprint) =>
          new ApiError('CERT_IN_USE', { message: 'the certificate is already in use', data: { fingerprint } }),
      },
    });
  }

  async delete(id: string, apiSessionId: string): Promise<boolean> {
    const rows = await this.db
      .delete(apiSessionCertificates)
      .where(and(eq(apiSessionCertificates.id, id), eq(apiSessionCertificates.apiSessionId, apiSessionId)))
      .returning({ id: apiSessionCertificates.id });
    return rows.length > 0;
  }

  async deleteBySession(apiSessionId: string): Promise<number> {
    const rows = await this.db
      .delete(apiSessionCertificates)
      .where(eq(apiSessionCertificates.apiSessionId, apiSessionId))
      .returning({ id: apiSessionCertificates.id });
    return rows.length;
  }

  async deleteByIdentity(identityId: string): Promise<number> {
    const rows = await this.db
      .delete(apiSessionCertificates)
      .where(eq(apiSessionCertificates.identityId, identityId))
      .returning({ id: apiSessionCertificates.id });
    return rows.length;
  }

  async deleteExpired(now: Date): Promise<number> {
    const rows = await this.db
      .delete(apiSessionCertificates)
      .where(lte(apiSessionCertificates.validTo, now))
      .returning({ id: apiSessionCertificates.id });
    return rows.length;
  }
}
