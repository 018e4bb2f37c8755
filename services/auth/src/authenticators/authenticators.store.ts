import { ApiError } from '@ziti/contracts';
import {
  type Db,
  type LockOption,
  date,
  json,
  listRows,
  lockClause,
  queryRows,
  withUniqueFields,
  toListPage,
} from '@ziti/platform';
import type { Authenticator, ListInput, ListPage } from '../shared/model.domain.ts';
import type { AuthenticatorStore, PasswordLoginRead } from './authenticators.ports.ts';
import { authPolicyColumns, policyFromRow } from '../auth-policies/auth-policies.store.ts';
import { identityColumns, identityFromRow } from '../identities/identities.store.ts';
import { authenticatorQuery } from '../shared/query-entities.store.ts';

type Row = Record<string, unknown>;

function authenticatorFromRow(r: Row): Authenticator {
  return {
    id: String(r.id),
    identityId: String(r.identity_id),
    method: r.method as Authenticator['method'],
    username: (r.username as string | null) ?? null,
    passwordHash: (r.password_hash as string | null) ?? null,
    salt: (r.salt as string | null) ?? null,
    certFingerprint: (r.cert_fingerprint as string | null) ?? null,
    certPem: (r.cert_pem as string | null) ?? null,
    tags: json(r.tags, {}),
    createdAt: date(r.created_at),
    updatedAt: date(r.updated_at),
  };
}

const authenticatorColumns = `id, identity_id, method, username, password_hash, salt, cert_fingerprint, cert_pem, tags,
  created_at, updated_at`;
const authenticatorById = `select ${authenticatorColumns} from authenticators where id = $1`;
/** Logins look authenticators up by these (prepared). */
const authenticatorByUsername = `select ${authenticatorColumns} from authenticators where username = $1 and method = 'updb'`;
/** `alias.column as alias_column` for each of `columns`: one row can carry several tables' columns. */
const prefixedColumns = (alias: string, columns: string) =>
  columns
    .split(',')
    .map((c) => c.trim().replace(/^\w+\./, ''))
    .map((c) => `${alias}.${c} as ${alias}_${c.replace(/"/g, '')}`)
    .join(', ');
/**
 * Per alias, the password login row's `<alias>_<column>` keys and their unprefixed names: the
 * statement's columns never change, so they are worked out once (`passwordLogin` is the only
 * statement read this way).
 */
const loginRowKeys = new Map<string, [string, string][]>();

/** One entity's columns of the password login row, unprefixed; null when the join found none. */
function loginRowPart(r: Row, alias: 'a' | 'i' | 'p'): Row | null {
  if (r[`${alias}_id`] === null || r[`${alias}_id`] === undefined) return null;
  const p = `${alias}_`;
  let keys = loginRowKeys.get(p);
  if (!keys) {
    keys = Object.keys(r)
      .filter((k) => k.startsWith(p))
      .map((k): [string, string] => [k, k.slice(p.length)]);
    loginRowKeys.set(p, keys);
  }
  const out: Row = {};
  for (const [from, to] of keys) out[to] = r[from];
  return out;
}
/** A password login's reads as one prepared statement (see `findPasswordLogin`). */
const passwordLogin = `select ${prefixedColumns('a', authenticatorColumns)}, ${prefixedColumns('i', identityColumns)},
    ${prefixedColumns('p', authPolicyColumns)},
    exists (select from mfa m where m.identity_id = i.id and m.is_verified) as mfa_verified,
    (select f.attempts from updb_failed_attempts f where f.authenticator_id = a.id) as failed_attempts
  from (select 1) as one
  left join authenticators a on a.username = $1 and a.method = 'updb'
  left join identities i on i.id = a.identity_id
  left join auth_policies p on p.id = coalesce(i.auth_policy_id, $2)`;
const authenticatorByFingerprint = `select ${authenticatorColumns} from authenticators
  where cert_fingerprint = $1 and method = 'cert'`;

/** An authenticator's columns in `authenticatorColumns` order, as statement parameters. */
function authenticatorValues(a: Authenticator): unknown[] {
  return [
    a.id,
    a.identityId,
    a.method,
    a.username,
    a.passwordHash,
    a.salt,
    a.certFingerprint,
    a.certPem,
    JSON.stringify(a.tags),
    a.createdAt,
    a.updatedAt,
  ];
}

const insertAuthenticator = `insert into authenticators (${authenticatorColumns})
  values ($1, $2, $3, $4, $5, $6, $7, $8, $9::jsonb, $10, $11)`;
/** Every column but `created_at` (`$10`, unused) from `authenticatorValues`. */
const updateAuthenticator = `update authenticators set identity_id = $2, method = $3, username = $4,
  password_hash = $5, salt = $6, cert_fingerprint = $7, cert_pem = $8, tags = $9::jsonb, updated_at = $11
  where id = $1`;

export class PgAuthenticatorStore implements AuthenticatorStore {
  constructor(private readonly db: Db) {}

  async get(id: string, options: LockOption = {}): Promise<Authenticator | null> {
    const [row] = await queryRows<Row>(this.db, `${authenticatorById}${lockClause(options)}`, [id]);
    return row ? authenticatorFromRow(row) : null;
  }

  private unique(a: Authenticator) {
    return {
      authenticators_username_key: { field: 'username', store: 'authenticators', value: a.username },
      authenticators_cert_fingerprint_key: {
        field: 'certPem',
        store: 'authenticators',
        value: a.certFingerprint,
        error: (v: unknown) =>
          new ApiError('CERT_IN_USE', { message: 'the certificate is already in use', data: { fingerprint: v } }),
      },
      authenticators_identity_method_key: {
        field: 'method',
        store: 'authenticators',
        value: a.method,
        error: (v: unknown) =>
          new ApiError('MAX_AUTHENTICATOR_METHODS_REACHED', {
            field: 'method',
            reason: `identity already has a ${String(v)} authenticator`,
            value: String(v),
          }),
      },
    };
  }

  async insert(a: Authenticator): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, insertAuthenticator, authenticatorValues(a)), this.unique(a));
  }

  async update(a: Authenticator): Promise<void> {
    await withUniqueFields(() => queryRows(this.db, updateAuthenticator, authenticatorValues(a)), this.unique(a));
  }

  async delete(id: string): Promise<boolean> {
    return (await queryRows(this.db, 'delete from authenticators where id = $1 returning id', [id])).length > 0;
  }

  async listByIdentity(identityId: string): Promise<Authenticator[]> {
    const rows = await queryRows<Row>(
      this.db,
      `select ${authenticatorColumns} from authenticators where identity_id = $1`,
      [identityId],
    );
    return rows.map(authenticatorFromRow);
  }

  async findByUsername(username: string): Promise<Authenticator | null> {
    const [row] = await queryRows<Row>(this.db, authenticatorByUsername, [username], { prepare: true });
    return row ? authenticatorFromRow(row) : null;
  }

  async findPasswordLogin(username: string, fallbackPolicyId: string): Promise<PasswordLoginRead> {
    const [row] = await queryRows<Row>(this.db, passwordLogin, [username, fallbackPolicyId], { prepare: true });
    const a = row && loginRowPart(row, 'a');
    const i = row && loginRowPart(row, 'i');
    const p = row && loginRowPart(row, 'p');
    return {
      authenticator: a ? authenticatorFromRow(a) : null,
      identity: i ? identityFromRow(i) : null,
      policy: p ? policyFromRow(p) : null,
      mfaVerified: row?.mfa_verified === true,
      failedAttempts: Number(row?.failed_attempts ?? 0),
    };
  }

  async findByFingerprint(fingerprint: string): Promise<Authenticator | null> {
    const [row] = await queryRows<Row>(this.db, authenticatorByFingerprint, [fingerprint], { prepare: true });
    return row ? authenticatorFromRow(row) : null;
  }

  async list(input: ListInput, identityId?: string): Promise<ListPage<Authenticator>> {
    const scope = identityId ? { sql: 'a.identity_id = $1', params: [identityId] } : undefined;
    return toListPage(
      await listRows<Row>(this.db, authenticatorQuery, input, scope ? { scope } : {}),
      authenticatorFromRow,
    );
  }
}
