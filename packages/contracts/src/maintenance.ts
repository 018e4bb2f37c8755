import { z } from 'zod';

/**
 * Maintenance calls every database-owning service serves on `ziti.rpc.<owner>.call.<action>`;
 * inventory fans `/summary` and `/database/*` out over them (ZITI-FACTS §13, DESIGN §2).
 */
export const maintenanceActions = {
  /** → `SummaryCounts`: entity type → count of the tables the service owns. */
  summaryCounts: 'maintenance.summaryCounts',
  /** `IntegrityCheckRequest` → `IntegrityCheckReply`: the service checks (and optionally fixes) its own data and read models. */
  integrityCheck: 'maintenance.integrityCheck',
  /** `SnapshotRequest` → `SnapshotReply`: a consistent copy of the service's database. */
  snapshot: 'maintenance.snapshot',
  /** `EntityStatesRequest` → `EntityStatesReply`: an owner's current states, for read models to compare and repair. */
  entityStates: 'maintenance.entityStates',
  /** → `EventPositionReply`: the position of the owner's last committed event (docs/adr/0008). */
  eventPosition: 'maintenance.eventPosition',
} as const;

export const eventPositionReplySchema = z.object({ position: z.number().int().nonnegative() });
export type EventPositionReply = z.infer<typeof eventPositionReplySchema>;

export const summaryCountsSchema = z.record(z.string(), z.number().int());
export type SummaryCounts = z.infer<typeof summaryCountsSchema>;

export const integrityCheckRequestSchema = z.object({ fix: z.boolean() });
export type IntegrityCheckRequest = z.infer<typeof integrityCheckRequestSchema>;

export const integrityResultSchema = z.object({ description: z.string(), fixed: z.boolean() });
export type IntegrityResult = z.infer<typeof integrityResultSchema>;

export const integrityCheckReplySchema = z.object({ results: z.array(integrityResultSchema) });
export type IntegrityCheckReply = z.infer<typeof integrityCheckReplySchema>;

export const snapshotRequestSchema = z.object({
  /** Shared by every service's snapshot of one request, so the files of one snapshot sort together. */
  label: z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/),
});
export type SnapshotRequest = z.infer<typeof snapshotRequestSchema>;

export const snapshotReplySchema = z.object({ path: z.string() });
export type SnapshotReply = z.infer<typeof snapshotReplySchema>;

/** Entity types whose owners answer `entityStates` (the events' state shapes). */
export const entityStateTypes = [
  'identity',
  'service',
  'edgeRouter',
  'config',
  'configType',
  'identityServiceConfigs',
  /** pki-enrollment's enrollments, non-secret state only (`enrollmentState`). */
  'enrollment',
  /** inventory's record of routers' control channels (`routerPresenceState`): one per router that ever connected. */
  'routerPresence',
] as const;
export type EntityStateType = (typeof entityStateTypes)[number];

/**
 * One page of an owner's entities, ordered by id: either the ones with the given `ids`, or the
 * next `limit` after `after`. Pages keep each reply well under the bus's message size.
 */
export const entityStatesRequestSchema = z.object({
  type: z.enum(entityStateTypes),
  ids: z.array(z.string()).max(500).optional(),
  after: z.string().optional(),
  limit: z.number().int().min(1).max(500).optional(),
});
export type EntityStatesRequest = z.infer<typeof entityStatesRequestSchema>;

/**
 * `position` is the owner's event position the page was read at: the page is exactly the owner's
 * state after every event up to it, so a read model applies it guarded by that position.
 */
export const entityStatesReplySchema = z.object({
  states: z.array(z.record(z.string(), z.unknown())),
  position: z.number().int().nonnegative(),
  /** Another page follows (after the last id of this one); absent on answers by `ids`. */
  more: z.boolean().optional(),
});
export type EntityStatesReply = z.infer<typeof entityStatesReplySchema>;
