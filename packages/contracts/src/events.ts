import { z } from 'zod';

/**
 * Versioned event definitions (DESIGN §3). An event carries the entity's full new state so a
 * consumer never has to call back. Bump `version` and keep the old schema when a shape changes
 * incompatibly; consumers accept every version they know.
 */
export const identityState = z.object({
  id: z.string(),
  name: z.string(),
  typeId: z.string(),
  isAdmin: z.boolean(),
  isDefaultAdmin: z.boolean(),
  roleAttributes: z.array(z.string()),
  externalId: z.string().nullable(),
  authPolicyId: z.string(),
  disabled: z.boolean(),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type IdentityState = z.infer<typeof identityState>;

export const eventTypes = {
  identityCreated: { type: 'identity.created', version: 1, schema: identityState },
  identityUpdated: { type: 'identity.updated', version: 1, schema: identityState },
  identityDeleted: { type: 'identity.deleted', version: 1, schema: identityState },
  apiSessionDeleted: {
    type: 'apiSession.deleted',
    version: 1,
    schema: z.object({ id: z.string(), identityId: z.string() }),
  },
} as const;

/** inventory's services (DESIGN §2), as policy's read model keeps them. */
export const serviceState = z.object({
  id: z.string(),
  name: z.string(),
  terminatorStrategy: z.string(),
  roleAttributes: z.array(z.string()),
  /** Config ids, in the order the administrator gave them. */
  configs: z.array(z.string()),
  encryptionRequired: z.boolean(),
  maxIdleTimeMillis: z.number(),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type ServiceState = z.infer<typeof serviceState>;

/** inventory's edge routers: what policy (read model, system policies) and auth (router identity) need. */
export const edgeRouterState = z.object({
  id: z.string(),
  name: z.string(),
  roleAttributes: z.array(z.string()),
  isTunnelerEnabled: z.boolean(),
  isVerified: z.boolean(),
  disabled: z.boolean(),
  noTraversal: z.boolean(),
  cost: z.number(),
  /** Lower-case hex SHA-1 of the enrolled client certificate; null until enrolled. */
  fingerprint: z.string().nullable(),
  appData: z.record(z.string(), z.unknown()),
  tags: z.record(z.string(), z.unknown()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type EdgeRouterState = z.infer<typeof edgeRouterState>;

export const inventoryEventTypes = {
  serviceCreated: { type: 'service.created', version: 1, schema: serviceState },
  serviceUpdated: { type: 'service.updated', version: 1, schema: serviceState },
  serviceDeleted: { type: 'service.deleted', version: 1, schema: serviceState },
  edgeRouterCreated: { type: 'edgeRouter.created', version: 1, schema: edgeRouterState },
  edgeRouterUpdated: { type: 'edgeRouter.updated', version: 1, schema: edgeRouterState },
  edgeRouterDeleted: { type: 'edgeRouter.deleted', version: 1, schema: edgeRouterState },
} as const;

/** A third-party CA as pki-enrollment publishes it (`ca.created|updated|deleted`). */
export const caState = z.object({
  id: z.string(),
  name: z.string(),
  fingerprint: z.string(),
  certPem: z.string(),
  isVerified: z.boolean(),
  isAuthEnabled: z.boolean(),
  isAutoCaEnrollmentEnabled: z.boolean(),
  isOttCaEnrollmentEnabled: z.boolean(),
  identityRoles: z.array(z.string()),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type CaState = z.infer<typeof caState>;

/** Events of pki-enrollment. Deleting a CA deletes the certificate authenticators it vouched for (auth). */
export const caEventTypes = {
  caCreated: { type: 'ca.created', version: 1, schema: caState },
  caUpdated: { type: 'ca.updated', version: 1, schema: caState },
  caDeleted: { type: 'ca.deleted', version: 1, schema: caState },
} as const;
