/**
 * The generator's corrections to ../shared/operations.tsv (the proposed owner, access and MFA
 * gating of every operation), each with its reason. The table is the input; these are the few rows
 * where the specs or the design say otherwise. `npm run generate` applies them.
 */

/**
 * Where the proposed table in operations.tsv is corrected by the spec itself: the client API's
 * service writes are described as "Requires admin access". The gateway enforces access from the
 * table, so the correction lives here, not in a handler.
 */
export const accessCorrections: Record<string, { access: string; reason: string }> = {
  'client PUT /services/{id}': { access: 'admin', reason: 'spec: "Requires admin access."' },
  'client PATCH /services/{id}': { access: 'admin', reason: 'spec: "Requires admin access."' },
  'client DELETE /services/{id}': { access: 'admin', reason: 'spec: "Requires admin access."' },
};

/**
 * Where the proposed owners are corrected by the design: a service detail carries the caller's
 * `permissions` and `postureQueries` (ZITI-FACTS §12.3), which only policy can compute (it holds the
 * derived access and a read model of every service, config and override). The management service
 * reads therefore live with the client ones in policy; inventory keeps the writes.
 */
export const ownerCorrections: Record<string, { owner: string; reason: string }> = {
  'management GET /services': { owner: 'policy', reason: 'permissions/postureQueries of the caller' },
  'management GET /services/{id}': { owner: 'policy', reason: 'permissions/postureQueries of the caller' },
  'management GET /configs/{id}/services': { owner: 'policy', reason: 'permissions/postureQueries of the caller' },
};
