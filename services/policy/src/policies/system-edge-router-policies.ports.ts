/** A live edge router with tunneling enabled, as policy's read model has it. */
export interface TunnelerRouter {
  id: string;
  /** Its owner's `updatedAt` of the state that enabled it (when its system policy is made). */
  updatedAt: Date;
}

/** What the system edge-router policies are kept in line with (the read model of inventory's routers). */
export interface SystemEdgeRouterPolicyStore {
  /** The live edge routers with tunneling enabled, only those of `ids` when given. */
  tunnelerRouters(ids?: string[]): Promise<TunnelerRouter[]>;
  /** The ids of the system edge-router policies (each its router's id), only those of `ids` when given. */
  systemPolicyIds(ids?: string[]): Promise<string[]>;
  /** The id of the edge-router policy that has `name`, if one has. */
  policyNamed(name: string): Promise<string | undefined>;
}
