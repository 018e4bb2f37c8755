import { createHash } from 'node:crypto';
import { ApiError, type EnrollmentState, enrollmentEventTypes } from '@ziti/contracts';
import {
  type Db,
  type EventSink,
  type LockOption,
  type SecretBox,
  date,
  entityStatesPage,
  json,
  listRows,
  lockClause,
  queryRows,
  statesPageRows,
  strOrNull,
  toListPage,
  uniqueViolation,
} from '@ziti/platform';
import { baseEntityFields, defineQueryEntity, scalar } from '@ziti/zitiql';
import type { Enrollment, EnrollmentMethod, ListInput, ListPage } from '../shared/model.domain.ts';
import type { EnrollmentStatePages } from '../shared/maintenance.domain.ts';
import type { Row } from '../shared/rows.store.ts';
import { enrollmentState } from './enrollment-events.domain.ts';
import type { EnrollmentStore } from './enrollments.ports.ts';

/**
 * Enrollments: the reference's `identity`, `edgeRouter`, `transitRouter`, `caId` (ZITI-FACTS §3.5:
 * `method` and `expiresAt` are not symbols, so a filter on them is INVALID_FILTER, as in the
 * reference). `token` is not filterable here: tokens are stored encrypted (only their hash is
 * indexed), and a filter on a secret would be an oracle for it anyway.
 */
export const enrollmentQuery = defineQueryEntity({
  table: 'enrollments',
  alias: 'e',
  fields: {
    ...baseEntityFields('e'),
    identity: scalar('e.identity_id', 'string'),
    edgeRouter: scalar('e.edge_router_id', 'string'),
    transitRouter: scalar('e.transit_router_id', 'string'),
    caId: scalar('e.ca_id', 'string'),
  },
});

export function tokenHash(token: string): string {
  return createHash('sha256').update(token, 'utf8').digest('hex');
}

/** The non-secret columns of an enrollment: what its events carry (docs/adr/0012). */
const stateColumns =
  'id, method, identity_id, edge_router_id, transit_router_id, ca_id, expires_at, created_at, updated_at';

/** An enrollment's published state from a row of `stateColumns` (never the token or JWT columns). */
function stateFromRow(r: Row): EnrollmentState {
  return {
    id: String(r.id),
    method: String(r.method),
    identityId: strOrNull(r.identity_id),
    edgeRouterId: strOrNull(r.edge_router_id),
    transitRouterId: strOrNull(r.transit_router_id),
    caId: strOrNull(r.ca_id),
    expiresAt: date(r.expires_at).toISOString(),
    createdAt: date(r.created_at).toISOString(),
    updatedAt: date(r.updated_at).toISOString(),
  };
}

/**
 * One page of enrollment states for `entityStates` (docs/adr/0008), in bytewise id order, read
 * through the caller's transaction: the same shape the events carry.
 */
export const enrollmentStatesPage: EnrollmentStatePages<Db> = async (db, request) =>
  (await statesPageRows<Row>(db, { columns: stateColumns, from: 'enrollments' }, entityStatesPage(request))).map(
    stateFromRow,
  );

const insertEnrollment = `insert into enrollments (id, method, token_hash, token_encrypted, jwt_encrypted, identity_id,
    edge_router_id, transit_router_id, ca_id, username, expires_at, tags, created_at, updated_at)
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11::timestamptz, $12::jsonb, $13::timestamptz, $14::timestamptz)`;

/** Every column of the entity but the id and the creation time (`$13` unused), which it answers. */
const updateEnrollment = `update enrollments set method = $2, token_hash = $3, token_encrypted = $4, jwt_encrypted = $5,
    identity_id = $6, edge_router_id = $7, transit_router_id = $8, ca_id = $9, username = $10,
    expires_at = $11::timestamptz, tags = $12::jsonb, updated_at = $14::timestamptz
  where id = $1
  returning created_at`;

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

  /** Maps a raw (snake_case) enrollments row: every read of an enrollment is SQL. */
  private fromRow(r: Row): Enrollment {
    const id = String(r.id);
    return {
      id,
      method: String(r.method) as EnrollmentMethod,
      token: this.box.decryptString(String(r.token_encrypted), { context: `enrollment:${id}:token` }),
      jwt: this.box.decryptString(String(r.jwt_encrypted), { context: `enrollment:${id}:jwt` }),
      identityId: (r.identity_id as string | null) ?? null,
      edgeRouterId: (r.edge_router_id as string | null) ?? null,
      transitRouterId: (r.transit_router_id as string | null) ?? null,
      caId: (r.ca_id as string | null) ?? null,
      username: (r.username as string | null) ?? null,
      expiresAt: date(r.expires_at),
      tags: json(r.tags, {}),
      createdAt: date(r.created_at),
      updatedAt: date(r.updated_at),
    };
  }

  /**
   * An enrollment's columns as parameters `$1…$14` (id first, created_at `$13`, updated_at `$14`):
   * the token only as its hash and sealed, the JWT sealed, jsonb as JSON text, timestamps as ISO text.
   */
  private params(e: Enrollment): unknown[] {
    return [
      e.id,
      e.method,
      tokenHash(e.token),
      this.box.encrypt(e.token, { context: `enrollment:${e.id}:token` }),
      this.box.encrypt(e.jwt, { context: `enrollment:${e.id}:jwt` }),
      e.identityId,
      e.edgeRouterId,
      e.transitRouterId,
      e.caId,
      e.username,
      e.expiresAt.toISOString(),
      JSON.stringify(e.tags),
      e.createdAt.toISOString(),
      e.updatedAt.toISOString(),
    ];
  }

  /** Any unique key of enrollments but the token's: an identity's one enrollment of a method, a router's one enrollment. */
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
    const [row] = await queryRows<Row>(this.db, `select * from enrollments where id = $1${lockClause(options)}`, [id]);
    return row ? this.fromRow(row) : null;
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
    const rows = await queryRows<Row>(
      this.db,
      'select * from enrollments where identity_id = any($1::text[]) order by created_at, id collate "C"',
      [unique],
    );
    return rows.map((r) => this.fromRow(r));
  }

  async insert(e: Enrollment): Promise<void> {
    await queryRows(this.db, insertEnrollment, this.params(e), { prepare: true }).catch((err) => this.unique(err, e));
    await this.emitted(enrollmentEventTypes.enrollmentCreated, [enrollmentState(e)]);
  }

  async update(e: Enrollment): Promise<void> {
    const rows = await queryRows<Row>(this.db, updateEnrollment, this.params(e)).catch((err) => this.unique(err, e));
    // The stored creation time, whatever the caller's copy says.
    if (rows[0])
      await this.emitted(enrollmentEventTypes.enrollmentUpdated, [
        enrollmentState({ ...e, createdAt: date(rows[0].created_at) }),
      ]);
  }

  async delete(id: string): Promise<boolean> {
    const rows = await queryRows<Row>(this.db, `delete from enrollments where id = $1 returning ${stateColumns}`, [id]);
    return (await this.deleted(rows)).length > 0;
  }

  async deleteByCa(caId: string): Promise<string[]> {
    const rows = await queryRows<Row>(this.db, `delete from enrollments where ca_id = $1 returning ${stateColumns}`, [
      caId,
    ]);
    return this.deleted(rows);
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
