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
