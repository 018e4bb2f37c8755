import { operations } from './generated/operations.ts';
import type { ApiName, OperationDef, Owner } from './operation.ts';

/**
 * The operation table: every operation of the two official specs, one row each (generated from
 * the specs and `operations.tsv` by `npm run generate`). The gateway routes by it, the `/specs`
 * document is built from it and tests walk it.
 */
export { operations };

const routeKey = (api: ApiName, method: string, specPath: string) => `${api} ${method.toUpperCase()} ${specPath}`;

const byRoute = new Map<string, OperationDef>();
const byId = new Map<string, OperationDef>();
const byOwner = new Map<Owner, OperationDef[]>();
for (const op of operations) {
  byRoute.set(routeKey(op.api, op.method, op.path), op);
  byId.set(`${op.api}.${op.operationId}`, op);
  const owned = byOwner.get(op.owner) ?? [];
  owned.push(op);
  byOwner.set(op.owner, owned);
}

/** The operation at a spec path (e.g. `/identities/{id}`, relative to the API base); method case-insensitive. */
export function findOperation(api: ApiName, method: string, specPath: string): OperationDef | undefined {
  return byRoute.get(routeKey(api, method, specPath));
}

/** Every operation a service owns, in table order (both APIs). */
export function operationsByOwner(owner: Owner): OperationDef[] {
  return [...(byOwner.get(owner) ?? [])];
}

/** The operation of an API by its operationId (the logout operations are `deleteCurrentApiSession`). */
export function operationById(api: ApiName, operationId: string): OperationDef | undefined {
  return byId.get(`${api}.${operationId}`);
}
