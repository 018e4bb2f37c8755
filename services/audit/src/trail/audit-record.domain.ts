import type { AuditRecordState, AuthenticationAttemptState, EntityChangeEvent, RequestMeta } from '@ziti/contracts';
import { type ChangeAction, httpMethodOf } from './entity-kinds.domain.ts';
import { redactState } from './redaction.domain.ts';
import { type EntityStateValue, diffStates } from './state-diff.domain.ts';

/**
 * `metadata.version` of the entity-change events: the controller's version, as OpenZiti's controller puts its
 * own there; this one reports the reference release whose API it implements (`GET /version`).
 */
export const entityChangeVersion = 'v1.1.9';

/** The source event a record is made from, as the trail needs it. */
export interface SourceEvent {
  /** `<source>:<position>` (an attempt of a batch: `<source>:<position>#<index>`): the record's key. */
  id: string;
  occurredAt: string;
  meta?: RequestMeta;
}

/** What is known of a change when its record is made. */
export interface ChangeFacts {
  recordId: string;
  event: SourceEvent & { meta: RequestMeta };
  entityType: string;
  entityId: string;
  action: ChangeAction;
  /**
   * The entity's state before the change: null when there was none (a creation); undefined when the
   * trail cannot tell (it learnt of the entity only from a later state, e.g. after a rebuild).
   */
  before: EntityStateValue | null | undefined;
  /** Its state after the change (null once deleted). */
  after: EntityStateValue | null;
  actorName?: string;
  /** Whose entity it is named after when it has no name of its own (an identity's service configs). */
  ownerName?: string;
  /** This controller's id (`event_src_id`). */
  controllerId: string;
}

const optional = <K extends string, V>(key: K, value: V | undefined | null): { [P in K]?: V } =>
  (value === undefined || value === null || value === '' ? {} : { [key]: value }) as { [P in K]?: V };

/** The name a state gives its entity: `name`, or an authenticator's `username`. */
export function entityNameOf(state: EntityStateValue | null | undefined): string | undefined {
  if (!state) return undefined;
  for (const field of ['name', 'username']) {
    const value = state[field];
    if (typeof value === 'string' && value !== '') return value;
  }
  return undefined;
}

/** What the record and the entity-change event share of the request that made the change. */
function requestFields(meta: RequestMeta, actorName: string | undefined) {
  return {
    operation: meta.operation,
    ...optional('method', httpMethodOf(meta.operation)),
    requestId: meta.requestId,
    ...optional('remoteAddress', meta.remoteAddress),
    ...optional('actorId', meta.identityId),
    ...optional('actorName', meta.identityId ? actorName : undefined),
    ...optional('apiSessionId', meta.apiSessionId),
  };
}

/**
 * The audit record of one entity change and its OpenZiti entity-change event: who (the request's
 * identity and API session), from where, which request and operation, what (the entity) and how (each
 * changed field before and after). Secrets are never in either, certificates only as fingerprints.
 */
export function changeRecord(f: ChangeFacts): { record: AuditRecordState; change: EntityChangeEvent } {
  const { meta } = f.event;
  const request = requestFields(meta, f.actorName);
  const changes = f.before === undefined ? undefined : diffStates(f.before, f.after);
  const record: AuditRecordState = {
    id: f.recordId,
    at: f.event.occurredAt,
    category: 'change',
    ...request,
    entityType: f.entityType,
    entityId: f.entityId,
    ...optional('entityName', entityNameOf(f.after) ?? entityNameOf(f.before) ?? f.ownerName),
    action: f.action,
    ...optional('changes', changes),
    eventId: f.event.id,
  };
  const change: EntityChangeEvent = {
    namespace: 'entityChange',
    event_src_id: f.controllerId,
    timestamp: f.event.occurredAt,
    eventId: f.event.id,
    eventType: f.action,
    metadata: {
      ...(meta.identityId
        ? { author: { type: 'identity' as const, id: meta.identityId, ...optional('name', f.actorName) } }
        : {}),
      source: {
        type: 'rest',
        auth: 'edge',
        ...optional('remoteAddr', meta.remoteAddress),
        ...optional('method', request.method),
      },
      operation: meta.operation,
      requestId: meta.requestId,
      ...optional('apiSessionId', meta.apiSessionId),
      version: entityChangeVersion,
    },
    entityType: f.entityType,
    isParentEvent: false,
    ...(f.before === undefined ? {} : { initialState: f.before === null ? null : redactState(f.before) }),
    finalState: f.after === null ? null : redactState(f.after),
  };
  return { record, change };
}

/** How an attempt names its operation when it came without the request's meta. */
const attemptOperations: Record<string, string> = { mfa: 'client.authenticateMfa' };

/**
 * The audit record of one authentication attempt: its outcome as the action, the method, why it failed,
 * and the identity when the attempt could be tied to one.
 */
export function authenticationRecord(o: {
  recordId: string;
  event: SourceEvent;
  attempt: AuthenticationAttemptState;
  /** The identity's name when the attempt does not carry it. */
  actorName?: string;
}): AuditRecordState {
  const { attempt, event } = o;
  const meta: RequestMeta = event.meta ?? {
    requestId: '',
    operation: attemptOperations[attempt.method] ?? 'client.authenticate',
  };
  const actorId = attempt.identityId ?? meta.identityId;
  const actorName = attempt.identityName ?? o.actorName;
  return {
    id: o.recordId,
    at: attempt.at || event.occurredAt,
    category: 'authentication',
    operation: meta.operation,
    ...optional('method', httpMethodOf(meta.operation)),
    requestId: meta.requestId,
    ...optional('remoteAddress', meta.remoteAddress),
    ...optional('actorId', actorId),
    ...optional('actorName', actorId ? actorName : undefined),
    ...optional('apiSessionId', attempt.apiSessionId ?? meta.apiSessionId),
    action: attempt.outcome,
    authMethod: attempt.method,
    ...optional('reason', attempt.reason),
    eventId: event.id,
  };
}
