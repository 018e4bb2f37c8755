import {
  type EntityOwner,
  type EntityStateType,
  type EventDefinition,
  operationKey,
  operations,
  publishedEvents,
} from '@ziti/contracts';

/** What an audit record says happened to an entity. */
export type ChangeAction = 'created' | 'updated' | 'deleted';

/** One event type that changes an entity, and how the trail names it. */
export interface EntityEventKind {
  source: EntityOwner;
  def: EventDefinition;
  /** The management API's collection name (`identities`, `servicePolicies`…), as OpenZiti's entityChange names it. */
  entityType: string;
  action: ChangeAction;
}

/**
 * The entities whose events the trail follows, by the prefix of their event types, with the management
 * API's name of their collection. Events of other prefixes are derived (`identityAccess.*`, who may reach
 * what), logins (`apiSession.*`, reported by `authentication.attempted` instead) or unknown to this build:
 * they make no record. `identityServiceConfigs` is an identity's service-config overrides
 * (`/identities/{id}/service-configs`), one state per identity.
 */
const collections: Record<EntityOwner, Record<string, string>> = {
  auth: {
    identity: 'identities',
    authenticator: 'authenticators',
    authPolicy: 'authPolicies',
    mfa: 'mfa',
    externalJwtSigner: 'externalJwtSigners',
  },
  inventory: {
    service: 'services',
    edgeRouter: 'edgeRouters',
    config: 'configs',
    configType: 'configTypes',
    identityServiceConfigs: 'identityServiceConfigs',
    terminator: 'terminators',
  },
  'pki-enrollment': { ca: 'cas', enrollment: 'enrollments' },
  policy: {
    servicePolicy: 'servicePolicies',
    edgeRouterPolicy: 'edgeRouterPolicies',
    serviceEdgeRouterPolicy: 'serviceEdgeRouterPolicies',
    postureCheck: 'postureChecks',
  },
};

/** Event verbs → the change they are (`mfa.verified` updates the MFA enrollment). */
const actions: Record<string, ChangeAction> = {
  created: 'created',
  updated: 'updated',
  deleted: 'deleted',
  verified: 'updated',
};

export const entityOwners: readonly EntityOwner[] = ['auth', 'inventory', 'pki-enrollment', 'policy'];

/** Every entity event type `source` publishes (as this build knows them), with its collection and action. */
export function entityEventKinds(source: EntityOwner): EntityEventKind[] {
  const kinds: EntityEventKind[] = [];
  for (const def of Object.values(publishedEvents[source])) {
    const dot = def.type.lastIndexOf('.');
    const entityType = collections[source][def.type.slice(0, dot)];
    const action = actions[def.type.slice(dot + 1)];
    if (entityType && action) kinds.push({ source, def, entityType, action });
  }
  return kinds;
}

/**
 * The owners' entity types whose current states a rebuild reads (`maintenance.entityStates`), with the
 * collection name their rows have in the trail's entity states.
 */
export const rebuildableStates: Record<EntityOwner, { entity: EntityStateType; entityType: string }[]> = {
  auth: [{ entity: 'identity', entityType: 'identities' }],
  inventory: [
    { entity: 'service', entityType: 'services' },
    { entity: 'edgeRouter', entityType: 'edgeRouters' },
    { entity: 'config', entityType: 'configs' },
    { entity: 'configType', entityType: 'configTypes' },
    { entity: 'identityServiceConfigs', entityType: 'identityServiceConfigs' },
  ],
  'pki-enrollment': [{ entity: 'enrollment', entityType: 'enrollments' }],
  policy: [],
};

/**
 * An owner's state of one of its entity types as its events carry it (decoded by the event's schema:
 * defaults filled, fields the contract does not name left out), so that a state read from an owner's
 * state page compares with the next event's field for field. A state the schema refuses is kept as it is.
 */
export function asEventState(source: EntityOwner, entityType: string, state: Record<string, unknown>) {
  const kind = entityEventKinds(source).find((k) => k.entityType === entityType);
  const parsed = kind?.def.schema.safeParse(state);
  return parsed?.success ? (parsed.data as Record<string, unknown>) : state;
}

const methods = new Map(operations.map((op) => [operationKey(op), op.method]));

/** The HTTP method of an operation (`management.updateIdentity` → `PUT`), from the operation table. */
export function httpMethodOf(operation: string): string | undefined {
  return methods.get(operation);
}
