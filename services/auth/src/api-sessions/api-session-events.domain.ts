import { type ApiSessionDeleteReason, type ApiSessionState, type MfaState, eventTypes } from '@ziti/contracts';
import type { ApiSessionRecord } from '@ziti/platform/sessions/api-session-store';
import type { EventSink } from '@ziti/platform/event-sink';
import type { StoredMfa } from '../mfas/mfas.ports.ts';
import type { AuthStores } from '../shared/stores.ports.ts';

/**
 * The facts auth publishes about API sessions and MFA, in the caller's unit of work.
 *
 * API sessions live in Redis, which is not part of any transaction, so every path orders its
 * steps to never lose an end (docs/adr/0002):
 * - open: the session is created in Redis and nothing is announced (docs/adr/0017): policy learns
 *   an API session from the caller the gateway passes, so every consumer must take an end of a
 *   session it never heard of (they are idempotent and order-independent).
 * - end: the session is ended in Redis first (`end`/`endByIdentity`: the token stops working at
 *   once and a tombstone keeps the record), then `apiSession.deleted` commits with the change
 *   that caused it, then the tombstone is forgotten. A crash or a rollback in between leaves the
 *   tombstone, which the sweeper announces after its grace period: at worst an end is announced
 *   twice, never not at all, and no deleted session keeps working while its event is pending.
 * - expiry: the sweeper claims expired sessions (`claimEnded`, leased so replicas do not
 *   collide), commits `apiSession.expired`, then forgets them.
 */
export function apiSessionState(r: ApiSessionRecord): ApiSessionState {
  return {
    id: r.id,
    identityId: r.identityId,
    authenticatorId: r.authenticatorId,
    authMethod: r.authMethod,
    ipAddress: r.ipAddress,
    isMfaRequired: r.isMfaRequired,
    isMfaComplete: r.isMfaComplete,
    configTypes: r.configTypes,
    createdAt: r.createdAt,
  };
}

/**
 * Reasons whose announcements commit with the identity's deletion: a tombstone left with one of
 * them is announced by the sweeper only while the identity still exists (the deletion rolled
 * back); once the identity is gone they were announced with it.
 */
const identityDeletionReasons: ReadonlySet<string> = new Set<ApiSessionDeleteReason>([
  'identityDeleted',
  'routerRemoved',
]);

/** Likewise for the reasons that commit with the deletion of the session's authenticator. */
const authenticatorDeletionReasons: ReadonlySet<string> = new Set<ApiSessionDeleteReason>([
  'authenticatorDeleted',
  'authenticatorReEnrolled',
]);

/**
 * Whether a tombstone left with `reason` was already announced with the change that ended it: the
 * identity or authenticator it names is gone, so that change committed (its announcement with it).
 */
export async function announcedWithItsEnd(
  s: Pick<AuthStores, 'identities' | 'authenticators'>,
  r: ApiSessionRecord,
  reason: string,
): Promise<boolean> {
  if (identityDeletionReasons.has(reason)) return !(await s.identities.get(r.identityId));
  if (authenticatorDeletionReasons.has(reason)) return !(await s.authenticators.get(r.authenticatorId));
  return false;
}

export async function emitApiSessionDeleted(
  events: EventSink,
  r: ApiSessionRecord,
  reason: ApiSessionDeleteReason | (string & {}),
  endedAt: Date | string,
): Promise<void> {
  const t = eventTypes.apiSessionDeleted;
  const at = typeof endedAt === 'string' ? endedAt : endedAt.toISOString();
  await events.emit(t, { ...apiSessionState(r), reason, endedAt: at });
}

export async function emitApiSessionExpired(events: EventSink, r: ApiSessionRecord, endedAt: string): Promise<void> {
  const t = eventTypes.apiSessionExpired;
  await events.emit(t, { ...apiSessionState(r), endedAt });
}

/** `apiSession.mfaPassed`: the session passed MFA at `at` (MFA posture checks count from it). */
export async function emitMfaPassed(events: EventSink, apiSessionId: string, identityId: string, at: Date) {
  const t = eventTypes.apiSessionMfaPassed;
  await events.emit(t, { id: apiSessionId, identityId, passedAt: at.toISOString() });
}

type MfaFacts = Pick<StoredMfa, 'id' | 'identityId' | 'isVerified' | 'createdAt' | 'updatedAt'>;

export function mfaState(m: MfaFacts): MfaState {
  return {
    id: m.id,
    identityId: m.identityId,
    isVerified: m.isVerified,
    createdAt: m.createdAt.toISOString(),
    updatedAt: m.updatedAt.toISOString(),
  };
}

/** `mfa.created` (unverified), `mfa.verified`, `mfa.deleted` (its last state). */
export async function emitMfa(
  events: EventSink,
  kind: 'mfaCreated' | 'mfaVerified' | 'mfaDeleted',
  m: MfaFacts,
): Promise<void> {
  const t = eventTypes[kind];
  await events.emit(t, mfaState(m));
}
