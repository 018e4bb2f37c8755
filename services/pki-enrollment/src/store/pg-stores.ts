import { createHash } from 'node:crypto';
import { ApiError, type EnrollmentState, enrollmentEventTypes } from '@ziti/contracts';
import {
  type Db,
  type EventSink,
  type LockOption,
  lockedRows,
  type SecretBox,
  listRows,
  pgErrorOf,
  queryRows,
  toListPage,
} from '@ziti/platform';
import { and, asc, eq, gt, inArray, lte, sql } from 'drizzle-orm';
import type {
  Ca,
  Enrollment,
  EnrollmentMethod,
  ExternalIdClaim,
  ListInput,
  ListPage,
  SessionCertificate,
} from '../domain/model.ts';
import type { CaStore, EnrollmentStore, SessionCertificateStore } from '../domain/ports.ts';
import { enrollmentState } from '../domain/enrollment-events.ts';
import { caQuery, enrollmentQuery, sessionCertificateQuery } from './query-entities.ts';
import { apiSessionCertificates, cas, enrollments } from './schema.ts';

type Row = Record<string, unknown>;
const date = (v: unknown) => (v instanceof Date ? v : new Date(String(v)));
const json = <T>(v: unknown, fallback: T): T =>
  v === null || v === undefined ? fallback : typeof v === 'string' ? (JSON.parse(v) as T) : (v as T);

/** The constraint behind a Postgres unique violation, if that is what `err` is. */
export function uniqueViolation(err: unknown): string | undefined {
  const pg = pgErrorOf(err);
  return pg?.code === '23505' ? (pg.constraint ?? pg.constraint_name ?? '') : undefined;
}

// ------------------------------------------------------------------------------------------- CAs

function caFromRow(r: Row): Ca {
  return {
    id: String(r.id),
    name: String(r.name),
    fingerprint: String(r.fingerprint),
    certPem: String(r.cert_pem ?? r.certPem),
    isVerified: Boolean(r.is_verified ?? r.isVerified),
    verificationToken: String(r.verification_token ?? r.verificationToken),
    isAutoCaEnrollmentEnabled: Boolean(r.is_auto_ca_enrollment_enabled ?? r.isAutoCaEnrollmentEnabled),
    isOttCaEnrollmentEnabled: Boolean(r.is_ott_ca_enrollment_enabled ?? r.isOttCaEnrollmentEnabled),
    isAuthEnabled: Boolean(r.is_auth_enabled ?? r.isAuthEnabled),
    identityRoles: ((r.identity_roles ?? r.identityRoles) as string[] | null) ?? [],
    identityNameFormat: String(r.identity_name_format ?? r.identityNameFormat),
    externalIdClaim: json<ExternalIdClaim | null>(r.external_id_claim ?? r.externalIdClaim, null),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at ?? r.createdAt),
    updatedAt: date(r.updated_at ?? r.updatedAt),
  };
}

function caUnique(err: unknown, ca: Ca): never {
  const constraint = uniqueViolation(err);
  if (constraint === 'cas_name_key') {
    throw ApiError.field('name', `duplicate value '${ca.name}' in unique index on cas store`, ca.name);
  }
  if (constraint === 'cas_fingerprint_key') {
    throw ApiError.field('certPem', `duplicate value '${ca.fingerprint}' in unique index on cas store`, ca.fingerprint);
  }
  throw err;
}

export class PgCaStore implements CaStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Ca | null> {
    const query = this.db.select().from(cas).where(eq(cas.id, id));
    const rows = await lockedRows(query, options);
    return rows[0] ? caFromRow(rows[0] as unknown as Row) : null;
  }

  async all(): Promise<Ca[]> {
    const rows = await this.db.select().from(cas).orderBy(asc(cas.createdAt), asc(cas.id));
    return rows.map((r) => caFromRow(r as unknown as Row));
  }

  async list(input: ListInput): Promise<ListPage<Ca>> {
    return toListPage(await listRows<Row>(this.db, caQuery, input), caFromRow);
  }

  async insert(ca: Ca): Promise<void> {
    await this.db
      .insert(cas)
      .values(ca)
      .catch((err) => caUnique(err, ca));
  }

  async update(ca: Ca): Promise<void> {
    const { id, createdAt: _c, ...rest } = ca;
    await this.db
      .update(cas)
      .set(rest)
      .where(eq(cas.id, id))
      .catch((err) => caUnique(err, ca));
  }

  async delete(id: string): Promise<boolean> {
    return (await this.db.delete(cas).where(eq(cas.id, id)).returning({ id: cas.id })).length > 0;
  }

  async names(ids: string[]): Promise<Map<string, string>> {
    const unique = [...new Set(ids)];
    if (unique.length === 0) return new Map();
    const rows = await this.db.select({ id: cas.id, name: cas.name }).from(cas).where(inArray(cas.id, unique));
    return new Map(rows.map((r) => [r.id, r.name]));
  }
}

// ------------------------------------------------------------------------------------ enrollments

export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The non-secret columns of an enrollment: what its events carry (docs/adr/0012). */
const stateColumns =
  'id, method, identity_id, edge_router_id, transit_router_id, ca_id, expires_at, created_at, updated_at';

/** An enrollment's published state from a row of `stateColumns` (never the token or JWT columns). */
function stateFromRow(r: Row): EnrollmentState {
  const nullable = (v: unknown) => (v === null || v === undefined ? null : String(v));
  return {
    id: String(r.id),
    method: String(r.method),
    identityId: nullable(r.identity_id),
    edgeRouterId: nullable(r.edge_router_id),
    transitRouterId: nullable(r.transit_router_id),
    caId: nullable(r.ca_id),
    expiresAt: date(r.expires_at).toISOString(),
    createdAt: date(r.created_at).toISOString(),
    updatedAt: date(r.updated_at).toISOString(),
  };
}

/**
 * One page of enrollment states for `entityStates` (docs/adr/0008), in bytewise id order, read
 * through the caller's transaction: the same shape the events carry.
 */
export async function enrollmentStatesPage(
  db: Db,
  page: { where: string; params: unknown[]; limit: number },
): Promise<EnrollmentState[]> {
  const rows = await queryRows<Row>(
    db,
    `select ${stateColumns} from enrollments where ${page.where} order by id collate "C" limit ${Number(page.limit)}`,
    page.params,
  );
  return rows.map(stateFromRow);
}

/**
 * Enrollments with their token and JWT encrypted at rest (bound to the row id). Every write emits
 * `enrollment.created|updated|deleted` with the enrollment's non-secret state on the transaction's
 * event sink, so no write path can change an enrollment without its event (auth's read model of
 * outstanding enrollments follows them, docs/adr/0012). Claims are not part of the entity: no event.
 */
export class PgEnrollmentStore implements EnrollmentStore {
  constructor(
    private readonly db: Db,
    private readonly box: SecretBox,
    private readonly events: EventSink,
  ) {}

  private async emitted(
    def: (typeof enrollmentEventTypes)[keyof typeof enrollmentEventTypes],
    states: EnrollmentState[],
  ) {
    for (const state of states) await this.events.emit(def, state);
  }

  private async deleted(rows: Row[]): Promise<string[]> {
    await this.emitted(enrollmentEventTypes.enrollmentDeleted, rows.map(stateFromRow));
    return rows.map((r) => String(r.id));
  }

  private fromRow(r: Row): Enrollment {
    const id = String(r.id);
    return {
      id,
      method: String(r.method) as EnrollmentMethod,
      token: this.box.decryptString(String(r.token_encrypted ?? r.tokenEncrypted), {
        context: `enrollment:${id}:token`,
      }),
      jwt: this.box.decryptString(String(r.jwt_encrypted ?? r.jwtEncrypted), { context: `enrollment:${id}:jwt` }),
      identityId: ((r.identity_id ?? r.identityId) as string | null) ?? null,
      edgeRouterId: ((r.edge_router_id ?? r.edgeRouterId) as string | null) ?? null,
      transitRouterId: ((r.transit_router_id ?? r.transitRouterId) as string | null) ?? null,
      caId: ((r.ca_id ?? r.caId) as string | null) ?? null,
      username: (r.username as string | null) ?? null,
      expiresAt: date(r.expires_at ?? r.expiresAt),
      tags: json(r.tags, {}),
      createdAt: date(r.created_at ?? r.createdAt),
      updatedAt: date(r.updated_at ?? r.updatedAt),
    };
  }

  private toRow(e: Enrollment) {
    return {
      id: e.id,
      method: e.method,
      tokenHash: tokenHash(e.token),
      tokenEncrypted: this.box.encrypt(e.token, { context: `enrollment:${e.id}:token` }),
      jwtEncrypted: this.box.encrypt(e.jwt, { context: `enrollment:${e.id}:jwt` }),
      identityId: e.identityId,
      edgeRouterId: e.edgeRouterId,
      transitRouterId: e.transitRouterId,
      caId: e.caId,
      username: e.username,
      expiresAt: e.expiresAt,
      tags: e.tags,
      createdAt: e.createdAt,
      updatedAt: e.updatedAt,
    };
  }

  private unique(err: unknown, e: Enrollment): never {
    const constraint = uniqueViolation(err);
    if (constraint?.startsWith('enrollments_') && constraint !== 'enrollments_token_hash_key') {
      throw new ApiError('ENROLLMENT_EXISTS', {
        field: 'method',
        reason: 'enrollment of same method exists',
        value: e.method,
      });
    }
    throw err;
  }

  async get(id: string, options: LockOption = {}): Promise<Enrollment | null> {
    const query = this.db.select().from(enrollments).where(eq(enrollments.id, id));
    const rows = await lockedRows(query, options);
    return rows[0] ? this.fromRow(rows[0] as unknown as Row) : null;
  }

  async findByToken(token: string): Promise<Enrollment | null> {
    const rows = await queryRows<Row>(this.db, 'select * from enrollments where token_hash = $1', [tokenHash(token)]);
    return rows[0] ? this.fromRow(rows[0]) : null;
  }

  async claim(id: string, token: string, until: Date, now: Date): Promise<boolean> {
    const rows = await queryRows(
      this.db,
      `update enrollments set claimed_until = $3::timestamptz
        where id = $1 and token_hash = $2 and (claimed_until is null or claimed_until <= $4::timestamptz) returning 1`,
      [id, tokenHash(token), until.toISOString(), now.toISOString()],
    );
    return rows.length > 0;
  }

  async release(id: string): Promise<void> {
    await queryRows(this.db, 'update enrollments set claimed_until = null where id = $1', [id]);
  }

  async clearRouter(routerId: string, now: Date): Promise<boolean> {
    // The claim is re-checked on the row itself, so a claim committed meanwhile keeps it.
    await this.deleted(
      await queryRows<Row>(
        this.db,
        `delete from enrollments where (edge_router_id = $1 or transit_router_id = $1)
            and (claimed_until is null or claimed_until <= $2::timestamptz)
          returning ${stateColumns}`,
        [routerId, now.toISOString()],
      ),
    );
    const left = await queryRows(
      this.db,
      'select 1 from enrollments where edge_router_id = $1 or transit_router_id = $1 limit 1',
      [routerId],
    );
    return left.length === 0;
  }

  async list(input: ListInput, identityId?: string): Promise<ListPage<Enrollment>> {
    const scope = identityId !== undefined ? { sql: 'e.identity_id = $1', params: [identityId] } : undefined;
    return toListPage(await listRows<Row>(this.db, enrollmentQuery, input, scope ? { scope } : {}), (r) =>
      this.fromRow(r),
    );
  }

  async listByIdentities(identityIds: string[]): Promise<Enrollment[]> {
    const unique = [...new Set(identityIds)];
    if (unique.length === 0) return [];
    const rows = await this.db
      .select()
      .from(enrollments)
      .where(inArray(enrollments.identityId, unique))
      .orderBy(asc(enrollments.createdAt));
    return rows.map((r) => this.fromRow(r as unknown as Row));
  }

  async insert(e: Enrollment): Promise<void> {
    await this.db
      .insert(enrollments)
      .values(this.toRow(e))
      .catch((err) => this.unique(err, e));
    await this.emitted(enrollmentEventTypes.enrollmentCreated, [enrollmentState(e)]);
  }

  async update(e: Enrollment): Promise<void> {
    const { id, createdAt: _c, ...rest } = this.toRow(e);
    const rows = await this.db
      .update(enrollments)
      .set(rest)
      .where(eq(enrollments.id, id))
      .returning({ createdAt: enrollments.createdAt })
      .catch((err) => this.unique(err, e));
    // The stored creation time, whatever the caller's copy says.
    if (rows[0])
      await this.emitted(enrollmentEventTypes.enrollmentUpdated, [
        enrollmentState({ ...e, createdAt: rows[0].createdAt }),
      ]);
  }

  async delete(id: string): Promise<boolean> {
    const rows = await queryRows<Row>(this.db, `delete from enrollments where id = $1 returning ${stateColumns}`, [id]);
    return (await this.deleted(rows)).length > 0;
  }

  async deleteByIdentity(identityId: string, ids?: string[]): Promise<string[]> {
    const rows = await queryRows<Row>(
      this.db,
      `delete from enrollments where identity_id = $1 and ($2::text[] is null or id = any($2::text[]))
        returning ${stateColumns}`,
      [identityId, ids ?? null],
    );
    return this.deleted(rows);
  }
}

// ------------------------------------------------------------------------ API session certificates

function sessionCertificateFromRow(r: Row): SessionCertificate {
  return {
    id: String(r.id),
    apiSessionId: String(r.api_session_id ?? r.apiSessionId),
    identityId: String(r.identity_id ?? r.identityId),
    subject: String(r.subject),
    fingerprint: String(r.fingerprint),
    certPem: String(r.cert_pem ?? r.certPem),
    validFrom: date(r.valid_from ?? r.validFrom),
    validTo: date(r.valid_to ?? r.validTo),
    tags: json(r.tags, {}),
    createdAt: date(r.created_at ?? r.createdAt),
    updatedAt: date(r.updated_at ?? r.updatedAt),
  };
}

export class PgSessionCertificateStore implements SessionCertificateStore {
  constructor(
    private readonly db: Db,
    private readonly now: () => Date = () => new Date(),
  ) {}

  async get(id: string, apiSessionId: string): Promise<SessionCertificate | null> {
    const rows = await this.db
      .select()
      .from(apiSessionCertificates)
      .where(
        and(
          eq(apiSessionCertificates.id, id),
          eq(apiSessionCertificates.apiSessionId, apiSessionId),
          gt(apiSessionCertificates.validTo, this.now()),
        ),
      );
    return rows[0] ? sessionCertificateFromRow(rows[0] as unknown as Row) : null;
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
    await this.db
      .insert(apiSessionCertificates)
      .values(c)
      .catch((err) => {
        if (uniqueViolation(err) === 'api_session_certificates_fingerprint_key') {
          throw new ApiError('CERT_IN_USE', {
            message: 'the certificate is already in use',
            data: { fingerprint: c.fingerprint },
          });
        }
        throw err;
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
