import { randomUUID } from 'node:crypto';
import { ApiError, type PendingEnrollment } from '@ziti/contracts';
import { base62Uuid, shortId } from '@ziti/platform/ids';
import type { EnrollmentJwtIssuer } from './enrollment-jwt.domain.ts';
import type { Enrollment, EnrollmentMethod, ListInput, ListPage } from '../shared/model.domain.ts';
import type { CredentialPort } from '../shared/credentials.ports.ts';
import type { PkiStores, UnitOfWork } from '../shared/stores.ports.ts';

/** The management create body (ZITI-FACTS §12.7). */
export interface EnrollmentInput {
  method?: string;
  identityId?: string;
  expiresAt?: string;
  caId?: string | null;
  username?: string | null;
}

export interface EnrollmentOptions {
  /** Lifetime of enrollments created with an identity (ZITI_ENROLLMENT_DURATION_MINUTES). */
  durationMinutes: number;
}

/** A wanted enrollment of an identity: who, how, until when. Routers use the same record later. */
export interface EnrollmentSpec {
  method: EnrollmentMethod;
  identityId?: string;
  edgeRouterId?: string;
  transitRouterId?: string;
  caId?: string | null;
  username?: string | null;
  expiresAt: Date;
  /** When it is issued; defaults to now. A caller that derived `expiresAt` from a clock passes that reading. */
  issuedAt?: Date;
  /** `base62` for management creates, `short` for side effects (as the reference's generators). */
  idKind?: 'base62' | 'short';
}

const MAX_EXPIRY_MS = 10 * 365 * 86_400_000;
/** The spec's username length (4..100): an updb enrollment's username becomes the authenticator's. */
const USERNAME_LIMITS = { min: 4, max: 100 } as const;

function assertUsername(field: string, value: string | null | undefined): string {
  const username = (value ?? '').trim();
  if (username.length < USERNAME_LIMITS.min || username.length > USERNAME_LIMITS.max) {
    throw ApiError.field(
      field,
      `${field} must be ${USERNAME_LIMITS.min}..${USERNAME_LIMITS.max} characters long for updb enrollments`,
      value,
    );
  }
  return username;
}

/** Parses a wire `expiresAt`: a date-time in the future (and not absurdly far). */
export function assertFutureExpiry(value: string | undefined, now: Date, field = 'expiresAt'): Date {
  if (value === undefined || value === null || value === '')
    throw ApiError.field(field, `${field} in body is required`, value);
  const at = new Date(value);
  if (Number.isNaN(at.getTime()))
    throw ApiError.field(field, `${field} in body must be of type date-time: ${JSON.stringify(value)}`, value);
  if (at.getTime() <= now.getTime()) throw ApiError.field(field, `${field} must be in the future`, value);
  if (at.getTime() - now.getTime() > MAX_EXPIRY_MS)
    throw ApiError.field(field, `${field} must be within 10 years`, value);
  return at;
}

/**
 * Enrollments: the administrator's CRUD, the ones created with an identity, refresh (new token and
 * JWT), and the read model auth shows in an identity's detail. Every enrollment is one row with a
 * one-time token; the JWT is issued here for any method, routers included.
 */
export class EnrollmentService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly jwts: EnrollmentJwtIssuer,
    private readonly credentials: CredentialPort,
    private readonly options: EnrollmentOptions,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** The enrollment as shown: its JWT re-signed if the server certificate changed since. */
  private async fresh(e: Enrollment): Promise<Enrollment> {
    const jwt = await this.jwts.current(e);
    return jwt === e.jwt ? e : { ...e, jwt };
  }

  async get(id: string): Promise<Enrollment> {
    const e = await this.work((s) => s.enrollments.get(id));
    if (!e) throw ApiError.notFound('enrollment', id);
    return this.fresh(e);
  }

  async list(input: ListInput, identityId?: string): Promise<ListPage<Enrollment>> {
    if (identityId !== undefined) {
      const found = await this.credentials.identities([identityId]);
      if (!found.has(identityId)) throw ApiError.notFound('identity', identityId);
    }
    const page = await this.work((s) => s.enrollments.list(input, identityId));
    return { ...page, items: await Promise.all(page.items.map((e) => this.fresh(e))) };
  }

  /** Builds and signs a new enrollment (not stored). */
  async build(spec: EnrollmentSpec): Promise<Enrollment> {
    const now = spec.issuedAt ?? this.now();
    const token = randomUUID();
    const subject = spec.identityId ?? spec.edgeRouterId ?? spec.transitRouterId;
    if (!subject) throw new Error('an enrollment needs an identity or a router');
    return {
      id: spec.idKind === 'short' ? shortId() : base62Uuid(),
      method: spec.method,
      token,
      jwt: await this.jwts.sign({ subject, token, method: spec.method, expiresAt: spec.expiresAt }),
      identityId: spec.identityId ?? null,
      edgeRouterId: spec.edgeRouterId ?? null,
      transitRouterId: spec.transitRouterId ?? null,
      caId: spec.caId ?? null,
      username: spec.username ?? null,
      expiresAt: spec.expiresAt,
      tags: {},
      createdAt: now,
      updatedAt: now,
    };
  }

  /** Checks a CA an ottca enrollment names: it must exist. */
  private async assertCa(s: PkiStores, caId: string | null | undefined, field: string): Promise<string> {
    if (!caId) throw ApiError.field(field, `${field} is required for ottca enrollments`, caId);
    if (!(await s.cas.get(caId))) {
      throw new ApiError('REFERENCED_ENTITY_NOT_FOUND', { field, reason: `no ca found with id ${caId}`, value: caId });
    }
    return caId;
  }

  /** `POST /enrollments`: one per method and identity (409 ENROLLMENT_EXISTS). */
  async create(input: EnrollmentInput): Promise<Enrollment> {
    const now = this.now();
    const method = input.method;
    if (method !== 'ott' && method !== 'ottca' && method !== 'updb') {
      throw ApiError.field('method', 'method in body should be one of [ott ottca updb]', method);
    }
    const expiresAt = assertFutureExpiry(input.expiresAt, now);
    const identityId = input.identityId ?? '';
    const username = method === 'updb' ? assertUsername('username', input.username) : null;
    const identities = await this.credentials.identities([identityId]);
    if (!identities.has(identityId)) {
      throw new ApiError('REFERENCED_ENTITY_NOT_FOUND', {
        field: 'identityId',
        reason: `no identity found with id ${identityId}`,
        value: identityId,
      });
    }
    return this.work(async (s) => {
      const caId = method === 'ottca' ? await this.assertCa(s, input.caId, 'caId') : null;
      const e = await this.build({ method, identityId, caId, username, expiresAt });
      await s.enrollments.insert(e);
      return e;
    });
  }

  /**
   * The enrollments an identity is created with (auth calls this before committing the identity,
   * and compensates with `deleteForIdentity` if its commit fails).
   */
  async createForIdentity(
    identityId: string,
    specs: { method: 'ott' | 'ottca' | 'updb'; caId?: string; username?: string }[],
  ): Promise<string[]> {
    const issuedAt = this.now();
    const expiresAt = new Date(issuedAt.getTime() + this.options.durationMinutes * 60_000);
    return this.work(async (s) => {
      const ids: string[] = [];
      for (const spec of specs) {
        const caId = spec.method === 'ottca' ? await this.assertCa(s, spec.caId, 'enrollment.ottca') : null;
        const username = spec.method === 'updb' ? assertUsername('enrollment.updb', spec.username) : null;
        const e = await this.build({
          method: spec.method,
          identityId,
          caId,
          username,
          expiresAt,
          issuedAt,
          idKind: 'short',
        });
        await s.enrollments.insert(e);
        ids.push(e.id);
      }
      return ids;
    });
  }

  async deleteForIdentity(identityId: string, ids?: string[]): Promise<string[]> {
    return this.work((s) => s.enrollments.deleteByIdentity(identityId, ids));
  }

  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      if (!(await s.enrollments.delete(id))) throw ApiError.notFound('enrollment', id);
    });
  }

  /** A new token and JWT with the new expiry; the old token stops working at once. */
  async refresh(id: string, expiresAtText: string | undefined): Promise<Enrollment> {
    const expiresAt = assertFutureExpiry(expiresAtText, this.now());
    return this.work(async (s) => {
      const current = await s.enrollments.get(id, { forUpdate: true });
      if (!current) throw ApiError.notFound('enrollment', id);
      const rebuilt = await this.build({
        method: current.method,
        ...(current.identityId ? { identityId: current.identityId } : {}),
        ...(current.edgeRouterId ? { edgeRouterId: current.edgeRouterId } : {}),
        ...(current.transitRouterId ? { transitRouterId: current.transitRouterId } : {}),
        caId: current.caId,
        username: current.username,
        expiresAt,
      });
      const next: Enrollment = { ...current, token: rebuilt.token, jwt: rebuilt.jwt, expiresAt, updatedAt: this.now() };
      await s.enrollments.update(next);
      return next;
    });
  }

  /** The identity detail's `enrollment` (ZITI-FACTS §12.1): every enrollment still outstanding. */
  async pendingFor(identityIds: string[]): Promise<Record<string, PendingEnrollment[]>> {
    const { list, caNames } = await this.work(async (s) => {
      const list = await s.enrollments.listByIdentities(identityIds);
      return { list, caNames: await s.cas.names(list.flatMap((e) => (e.caId ? [e.caId] : []))) };
    });
    const out: Record<string, PendingEnrollment[]> = {};
    for (const e of list) {
      if (!e.identityId) continue;
      const fresh = await this.fresh(e);
      (out[e.identityId] ??= []).push({
        id: e.id,
        method: e.method,
        token: e.token,
        jwt: fresh.jwt,
        expiresAt: e.expiresAt.toISOString(),
        caId: e.caId,
        caName: e.caId ? (caNames.get(e.caId) ?? null) : null,
      });
    }
    return out;
  }
}
