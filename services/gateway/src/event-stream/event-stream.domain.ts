// The change feed as Server-Sent Events (issue 24): what a subscriber asked for, which events it
// gets, and how each is framed. Pure: the transport follows the bus and writes the socket.

import { ApiError, type EntityChangeEvent, entityChangeEvent } from '@ziti/contracts';
import { type DocumentPredicate, compileCondition } from '@ziti/zitiql';

/** What a subscriber follows, from its query: entity types, event types, a ZitiQL condition. */
export interface StreamSelection {
  /** Entity types (`identities`, `services`…) to follow; all when absent. */
  readonly entityTypes?: ReadonlySet<string>;
  /** `created`, `updated`, `deleted`; all when absent. */
  readonly eventTypes?: ReadonlySet<string>;
  /** On the final state, or the initial state of a delete. */
  readonly condition: DocumentPredicate;
}

export interface StreamRequest {
  readonly selection: StreamSelection;
  /** Resume after this position (the SSE id of the last event received); absent: from now on. */
  readonly afterSequence?: number;
}

const strings = (value: unknown): string[] =>
  value === undefined ? [] : (Array.isArray(value) ? value : [value]).map((v) => String(v));

/**
 * The subscriber's request from the validated query and the `Last-Event-ID` header (which wins over
 * the `lastEventId` parameter, as an EventSource that reconnects sends it). Throws the 400 a bad
 * filter or position is answered with, before the stream starts.
 */
export function streamRequestOf(query: Record<string, unknown>, lastEventIdHeader: string | undefined): StreamRequest {
  const entityTypes = strings(query.entityType).filter((t) => t !== '');
  const eventTypes = strings(query.eventType).filter((t) => t !== '');
  const filter = typeof query.filter === 'string' ? query.filter : undefined;
  const condition = compileCondition(filter);
  const header = lastEventIdHeader?.trim();
  const parameter = typeof query.lastEventId === 'string' ? query.lastEventId.trim() : undefined;
  const position = header !== undefined && header !== '' ? header : parameter;
  let afterSequence: number | undefined;
  if (position !== undefined && position !== '') {
    const field = header !== undefined && header !== '' ? 'Last-Event-ID' : 'lastEventId';
    if (!/^\d{1,16}$/.test(position) || !Number.isSafeInteger(Number(position))) {
      throw ApiError.field(
        field,
        `${field} must be the id of an event of this stream (a non-negative integer)`,
        position,
      );
    }
    afterSequence = Number(position);
  }
  return {
    selection: {
      ...(entityTypes.length > 0 ? { entityTypes: new Set(entityTypes) } : {}),
      ...(eventTypes.length > 0 ? { eventTypes: new Set(eventTypes) } : {}),
      condition,
    },
    ...(afterSequence !== undefined ? { afterSequence } : {}),
  };
}

/** The entity change an `auditRecord.created` event carries; undefined for an authentication record or anything else. */
export function changeOf(data: unknown): EntityChangeEvent | undefined {
  if (typeof data !== 'object' || data === null || !('change' in data)) return undefined;
  const parsed = entityChangeEvent.safeParse((data as { change: unknown }).change);
  return parsed.success ? parsed.data : undefined;
}

/** Whether a subscriber with this selection gets this change. */
export function selects(selection: StreamSelection, change: EntityChangeEvent): boolean {
  if (selection.entityTypes && !selection.entityTypes.has(change.entityType)) return false;
  if (selection.eventTypes && !selection.eventTypes.has(change.eventType)) return false;
  const state = change.eventType === 'deleted' ? change.initialState : change.finalState;
  return selection.condition(state ?? {});
}

// ---- Server-Sent Events framing (WHATWG HTML, "Server-sent events") ----------------------------------

/** One SSE message: `id`, `event` and `data` fields (each data line its own field), then a blank line. */
export function sseMessage(message: { id?: string | number; event?: string; data: string }): string {
  let out = '';
  if (message.id !== undefined) out += `id: ${singleLine(String(message.id))}\n`;
  if (message.event !== undefined) out += `event: ${singleLine(message.event)}\n`;
  for (const line of message.data.split(/\r\n|\r|\n/)) out += `data: ${line}\n`;
  return `${out}\n`;
}

/** A comment line (ignored by clients; keeps the connection and its proxies alive). */
export function sseComment(text: string): string {
  return `: ${singleLine(text)}\n\n`;
}

/** The reconnection delay the client should use, in milliseconds. */
export function sseRetry(ms: number): string {
  return `retry: ${Math.max(0, Math.floor(ms))}\n\n`;
}

function singleLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ');
}

/** A change as its SSE message: `id` its stream position, `event` its eventType, `data` the entityChange JSON. */
export function changeMessage(change: EntityChangeEvent, sequence: number): string {
  return sseMessage({ id: sequence, event: change.eventType, data: JSON.stringify(change) });
}

/** Why the gateway ends (or warns) a subscriber, sent as a final `event: error`. */
export type StreamErrorCode = 'SLOW_CONSUMER' | 'EVENTS_LOST' | 'SESSION_ENDED' | 'FEED_INTERRUPTED';

export function errorMessage(code: StreamErrorCode, message: string, extra: Record<string, unknown> = {}): string {
  return sseMessage({ event: 'error', data: JSON.stringify({ code, message, ...extra }) });
}
