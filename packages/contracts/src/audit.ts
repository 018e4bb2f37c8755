import { z } from 'zod';
import { requestMetaSchema } from './bus.ts';
import { auditRecordDetail } from './generated/schemas.ts';

/**
 * The audit trail and the change feed (issue 24).
 *
 * auth reports every authentication attempt in `authentication.attempted`, one event per batch of
 * attempts (written off the login's path, docs/adr/0021). The audit service turns every entity
 * change made through an API, and every attempt of a batch, into one audit record, and publishes each as `auditRecord.created` in its own outbox: the
 * change feed that the event stream (`GET /extensions/events`) and the event sinks follow, in the
 * order the records were made, each with OpenZiti's entity-change payload.
 */

/** One authentication attempt, as auth reports it (never a secret: no password, token, code or key). */
export const authenticationAttemptState = z.object({
  /** `password` | `cert` | `ext-jwt` | `mfa` (a TOTP code for a session's secondary factor). */
  method: z.string(),
  outcome: z.enum(['succeeded', 'failed']),
  /** When the attempt could be tied to an identity (its authenticator or certificate was found). */
  identityId: z.string().optional(),
  identityName: z.string().optional(),
  authenticatorId: z.string().optional(),
  /** The API session a success opened (or the session an MFA code was checked for). */
  apiSessionId: z.string().optional(),
  /** Why it failed, in the words of the error code the caller received (e.g. `INVALID_AUTH`). */
  reason: z.string().optional(),
  at: z.string(),
});
export type AuthenticationAttemptState = z.infer<typeof authenticationAttemptState>;

/** The most attempts one `authentication.attempted` carries (auth's batches are at most this long). */
export const maxAttemptsPerEvent = 500;

/**
 * One attempt of a batch: the attempt and the request it was made in. Each attempt carries its own
 * request's meta (the event is written later, outside any request, so its envelope has no meta);
 * absent only for an attempt reported outside a request, which no login path does.
 */
export const reportedAuthenticationAttempt = authenticationAttemptState.extend({ meta: requestMetaSchema.optional() });
export type ReportedAuthenticationAttempt = z.infer<typeof reportedAuthenticationAttempt>;

/**
 * `authentication.attempted`: a batch of attempts, in the order auth reported them (docs/adr/0021).
 * One event per batch, not per attempt: every consumer of auth's events and the stream handle each
 * event, and one per login took the CPU the password hashes need.
 *
 * Version 1: the one-event-per-attempt shape that preceded it was never published outside tests.
 */
export const authenticationAttemptsState = z.object({
  attempts: z.array(reportedAuthenticationAttempt).min(1).max(maxAttemptsPerEvent),
});
export type AuthenticationAttemptsState = z.infer<typeof authenticationAttemptsState>;

/** OpenZiti's entity-change event (`entityChange` namespace), as the reference streams it. */
export const entityChangeEvent = z.object({
  namespace: z.literal('entityChange'),
  event_src_id: z.string(),
  timestamp: z.string(),
  /** Shared by every change of one transaction (here: the source event's id, `<source>:<position>`). */
  eventId: z.string(),
  eventType: z.enum(['created', 'updated', 'deleted']),
  metadata: z.object({
    author: z.object({ type: z.literal('identity'), id: z.string(), name: z.string().optional() }).optional(),
    source: z
      .object({
        type: z.literal('rest'),
        auth: z.literal('edge'),
        remoteAddr: z.string().optional(),
        method: z.string().optional(),
      })
      .optional(),
    operation: z.string().optional(),
    requestId: z.string().optional(),
    apiSessionId: z.string().optional(),
    version: z.string(),
  }),
  /** The management API's collection name: `identities`, `services`, `edgeRouters`… */
  entityType: z.string(),
  isParentEvent: z.boolean(),
  initialState: z.record(z.string(), z.unknown()).nullable().optional(),
  finalState: z.record(z.string(), z.unknown()).nullable().optional(),
});
export type EntityChangeEvent = z.infer<typeof entityChangeEvent>;

/**
 * One audit record, as listed by `GET /extensions/audit-records`: the spec's `auditRecordDetail`
 * (management-extensions.yml), generated from it so the stored, published and served shapes are one.
 * `eventId` is the source event the record was made from, `<source>:<position>`; for an
 * authentication attempt `<source>:<position>#<index>`, its place in the event's batch (from 0).
 * Unique: a redelivered event makes no second record.
 */
export const auditRecordState = auditRecordDetail;
export type AuditRecordState = z.infer<typeof auditRecordState>;

/** What the audit service publishes for each record: the record, and for a change its entity-change event. */
export const auditRecordCreatedState = z.object({
  record: auditRecordState,
  change: entityChangeEvent.optional(),
});

export const authenticationEventTypes = {
  authenticationAttempted: { type: 'authentication.attempted', version: 1, schema: authenticationAttemptsState },
} as const;

export const auditEventTypes = {
  auditRecordCreated: { type: 'auditRecord.created', version: 1, schema: auditRecordCreatedState },
} as const;
