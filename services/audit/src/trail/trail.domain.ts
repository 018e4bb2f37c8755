import {
  type AuditRecordState,
  type AuthenticationAttemptState,
  type EntityChangeEvent,
  type ReportedAuthenticationAttempt,
  type RequestMeta,
  auditEventTypes,
} from '@ziti/contracts';
import type { EntityEventKind } from './entity-kinds.domain.ts';
import { type SourceEvent, authenticationRecord, changeRecord } from './audit-record.domain.ts';
import type { EntityStateValue } from './state-diff.domain.ts';
import type { AuditStores } from './trail.ports.ts';

/** One entity event as the trail receives it: the owner's position and the entity's new (or last) state. */
export interface EntityEvent extends SourceEvent {
  /** The owner's position of the event (`sequence`). */
  position: number;
  state: EntityStateValue;
}

export interface AuditTrailOptions {
  /** This controller's id, the entity-change events' `event_src_id`. */
  controllerId: string;
  newId: () => string;
}

/**
 * Turns the owners' events into the audit trail (issue 24). Every entity event keeps the trail's last
 * known state of its entity (to tell what the next change changed); one made on behalf of an API request
 * (it carries the request's meta) also becomes one audit record, published as `auditRecord.created` with
 * OpenZiti's entity-change event in the same transaction. Each record is keyed by the source event's id,
 * so an event applied twice makes one record and one publication.
 */
export class AuditTrail {
  constructor(private readonly o: AuditTrailOptions) {}

  /** Applies one entity event; returns the record it made, if it made one. */
  async applyEntityEvent(
    s: AuditStores,
    kind: EntityEventKind,
    event: EntityEvent,
  ): Promise<AuditRecordState | undefined> {
    const entityId = String(event.state.id ?? '');
    if (!entityId) throw new Error(`${kind.def.type} ${event.id} has no entity id`);
    // The state known before, the write and the actor's name in one round trip.
    const actorId = event.meta?.identityId;
    const { known, name: knownActorName } = await s.entityStates.replace(
      {
        entityType: kind.entityType,
        id: entityId,
        source: kind.source,
        state: event.state,
        deleted: kind.action === 'deleted',
      },
      event.position,
      actorId ? { entityType: 'identities', id: actorId } : undefined,
    );
    // A state known at this event's position or later (a rebuild read it after the change, or a later
    // event was applied first) says nothing of what this change changed.
    const current = known && known.position < event.position ? known : null;
    const stale = known !== null && current === null;
    let before: EntityStateValue | null | undefined;
    if (kind.action === 'created') before = null;
    else if (kind.action === 'deleted') before = current && !current.deleted ? current.state : event.state;
    else before = current ? (current.deleted ? null : current.state) : undefined;
    if (stale && kind.action === 'updated') before = undefined;
    if (!event.meta) return undefined;
    // An identity changing itself is named as it is after this change (read after the write).
    const self = kind.entityType === 'identities' && actorId === entityId;
    const actorName = self ? await this.identityName(s, event.meta) : knownActorName;
    const { record, change } = changeRecord({
      recordId: this.o.newId(),
      event: { ...event, meta: event.meta },
      entityType: kind.entityType,
      entityId,
      action: kind.action,
      before,
      after: kind.action === 'deleted' ? null : event.state,
      ...optionalName('actorName', actorName),
      ...optionalName('ownerName', await this.ownerName(s, kind, event.state)),
      controllerId: this.o.controllerId,
    });
    return (await this.publish(s, [{ record, change }]))[0];
  }

  /**
   * Applies one `authentication.attempted`, a batch of attempts: one record per attempt, in the batch's
   * order, each from the attempt's own request meta (the event's envelope has none: auth writes the
   * batch outside any request). Attempt `i` of event `<source>:<position>` is keyed
   * `<source>:<position>#<i>`, so a redelivered event makes no record twice. The whole batch is one
   * insert; only the records it stored are published. Returns the records made.
   */
  async applyAuthenticationAttempts(
    s: AuditStores,
    attempts: ReportedAuthenticationAttempt[],
    event: Pick<SourceEvent, 'id' | 'occurredAt'>,
  ): Promise<AuditRecordState[]> {
    // An identity's name is looked up once per batch, however many of its attempts the batch holds.
    const names = new Map<string, Promise<string | undefined>>();
    const nameOf = (id: string) => {
      let name = names.get(id);
      if (!name) names.set(id, (name = this.nameOf(s, 'identities', id)));
      return name;
    };
    const records: AuditRecordState[] = [];
    for (const [index, { meta, ...attempt }] of attempts.entries())
      records.push(
        await this.attemptRecord(
          attempt,
          { id: attemptEventId(event.id, index), occurredAt: event.occurredAt, ...(meta ? { meta } : {}) },
          nameOf,
        ),
      );
    return this.publish(
      s,
      records.map((record) => ({ record })),
    );
  }

  /** The record of one attempt, as its source event. */
  private async attemptRecord(
    attempt: AuthenticationAttemptState,
    event: SourceEvent,
    nameOf: (identityId: string) => Promise<string | undefined>,
  ): Promise<AuditRecordState> {
    const actorId = attempt.identityId ?? event.meta?.identityId;
    const actorName = attempt.identityName ?? (actorId ? await nameOf(actorId) : undefined);
    const at = Number.isNaN(Date.parse(attempt.at)) ? event.occurredAt : new Date(attempt.at).toISOString();
    return authenticationRecord({
      recordId: this.o.newId(),
      event,
      attempt: { ...attempt, at },
      ...optionalName('actorName', actorName),
    });
  }

  /**
   * Stores the records in one insert and publishes `auditRecord.created` for each one it stored (not
   * those a previous delivery of their event made), in the given order; returns those records.
   */
  private async publish(
    s: AuditStores,
    made: { record: AuditRecordState; change?: EntityChangeEvent }[],
  ): Promise<AuditRecordState[]> {
    if (made.length === 0) return [];
    const stored = new Set(await s.records.insertMany(made.map((m) => m.record)));
    const published: AuditRecordState[] = [];
    for (const { record, change } of made) {
      if (!stored.has(record.eventId)) continue;
      await s.events.emit(auditEventTypes.auditRecordCreated, { record, ...(change ? { change } : {}) });
      published.push(record);
    }
    return published;
  }

  private identityName(s: AuditStores, meta: RequestMeta): Promise<string | undefined> {
    return meta.identityId ? this.nameOf(s, 'identities', meta.identityId) : Promise.resolve(undefined);
  }

  /** An identity's service configs are named after the identity. */
  private ownerName(s: AuditStores, kind: EntityEventKind, state: EntityStateValue): Promise<string | undefined> {
    if (kind.entityType !== 'identityServiceConfigs' || typeof state.identityId !== 'string')
      return Promise.resolve(undefined);
    return this.nameOf(s, 'identities', state.identityId);
  }

  private async nameOf(s: AuditStores, entityType: string, id: string): Promise<string | undefined> {
    const name = (await s.entityStates.get(entityType, id))?.state.name;
    return typeof name === 'string' ? name : undefined;
  }
}

/** The key of attempt `index` (from 0) of the batch event `eventId`: `<source>:<position>#<index>`. */
export const attemptEventId = (eventId: string, index: number): string => `${eventId}#${index}`;

const optionalName = <K extends string>(key: K, value: string | undefined): { [P in K]?: string } =>
  (value === undefined ? {} : { [key]: value }) as { [P in K]?: string };
