import { ApiError } from '@ziti/contracts';
import { type Db, date, json, listRows, queryRows, toListPage, withUniqueFields } from '@ziti/platform';
import { baseEntityFields, defineQueryEntity, scalar } from '@ziti/zitiql';
import type { ListInput, ListPage, SessionCertificate } from '../shared/model.domain.ts';
import type { Row } from '../shared/rows.store.ts';
import type { SessionCertificateStore } from './session-certificates.ports.ts';

/** Filterable fields of API session certificates. */
export const sessionCertificateQuery = defineQueryEntity({
  table: 'api_session_certificates',
  alias: 's',
  fields: {
    ...baseEntityFields('s'),
    fingerprint: scalar('s.fingerprint', 'string'),
    subject: scalar('s.subject', 'string'),
    validFrom: scalar('s.valid_from', 'datetime'),
    validTo: scalar('s.valid_to', 'datetime'),
  },
});

/** Maps a raw (snake_case) api_session_certificates row: every read and write of one is SQL. */
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
    const rows = await queryRows<{ n: number }>(
      this.db,
      'select count(*)::int as n from api_session_certificates where api_session_id = $1 and valid_to > $2',
      [apiSessionId, this.now().toISOString()],
    );
    return Number(rows[0]?.n ?? 0);
  }

  async insert(c: SessionCertificate): Promise<void> {
    await withUniqueFields(
      () =>
        queryRows(
          this.db,
          `insert into api_session_certificates (id, api_session_id, identity_id, subject, fingerprint, cert_pem,
              valid_from, valid_to, tags, created_at, updated_at)
            values ($1, $2, $3, $4, $5, $6, $7::timestamptz, $8::timestamptz, $9::jsonb, $10::timestamptz, $11::timestamptz)`,
          [
            c.id,
            c.apiSessionId,
            c.identityId,
            c.subject,
            c.fingerprint,
            c.certPem,
            c.validFrom.toISOString(),
            c.validTo.toISOString(),
            JSON.stringify(c.tags),
            c.createdAt.toISOString(),
            c.updatedAt.toISOString(),
          ],
        ),
      {
        api_session_certificates_fingerprint_key: {
          field: 'certPem',
          store: 'apiSessionCertificates',
          value: c.fingerprint,
          error: (fingerprint) =>
            new ApiError('CERT_IN_USE', { message: 'the certificate is already in use', data: { fingerprint } }),
        },
      },
    );
  }

  async delete(id: string, apiSessionId: string): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      'delete from api_session_certificates where id = $1 and api_session_id = $2 returning id',
      [id, apiSessionId],
    );
    return rows.length > 0;
  }

  async deleteBySession(apiSessionId: string): Promise<number> {
    const rows = await queryRows(
      this.db,
      'delete from api_session_certificates where api_session_id = $1 returning id',
      [apiSessionId],
    );
    return rows.length;
  }

  async deleteByIdentity(identityId: string): Promise<number> {
    const rows = await queryRows(this.db, 'delete from api_session_certificates where identity_id = $1 returning id', [
      identityId,
    ]);
    return rows.length;
  }

  async deleteExpired(now: Date): Promise<number> {
    const rows = await queryRows(this.db, 'delete from api_session_certificates where valid_to <= $1 returning id', [
      now.toISOString(),
    ]);
    return rows.length;
  }
}
