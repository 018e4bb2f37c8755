import { ApiError } from '@ziti/contracts';
import { type Database, type Db, type EventSink, queryRows } from '@ziti/platform';
import type { PolicyKind, Touched } from '../access/access.ports.ts';
import { policyLinkTables, touchedKey } from '../access/link-tables.store.ts';
import type {
  AccessPair,
  PostureLink,
  RouterLink,
  WhatIfEngine,
  WhatIfNamed,
  WhatIfProbe,
  WhatIfSandbox,
} from './what-if.ports.ts';

const nameTables: Record<WhatIfNamed, string> = {
  identities: 'identities where not deleted and',
  services: 'services where not deleted and',
  edgeRouters: 'edge_routers where not deleted and',
  postureChecks: 'posture_checks where',
  servicePolicies: 'service_policies where',
};

/** `where` conditions on given id lists (`column = any($n)`), the lists as parameters. */
function conditions(pairs: [string, string[] | undefined][]): { where: string; params: unknown[] } {
  const parts: string[] = [];
  const params: unknown[] = [];
  for (const [column, ids] of pairs) if (ids !== undefined) parts.push(`${column} = any($${params.push(ids)}::text[])`);
  if (parts.length === 0) throw new Error('a what-if read names ids on at least one side');
  return { where: parts.join(' and '), params };
}

/**
 * The what-if's reads of the links and the access views (docs/adr/0011), in the sandbox's
 * transaction. Each condition is on a view's grouping column, so it is applied to the link tables
 * before they are joined: a read costs the links of the ids it names.
 */
export class PgWhatIfProbe implements WhatIfProbe {
  constructor(private readonly db: Db) {}

  async policyLinks(kind: PolicyKind, policyId: string): Promise<Touched> {
    const tables = policyLinkTables[kind];
    const rows = await queryRows<{ k: number; id: string }>(
      this.db,
      tables
        .map((t, i) => `select ${i} as k, ${t.column} as id from ${t.table} where policy_id = $1`)
        .join(' union all '),
      [policyId],
    );
    const out: Touched = { identities: [], services: [], edgeRouters: [], postureChecks: [] };
    for (const r of rows) out[touchedKey[tables[Number(r.k)]!.entities]]!.push(r.id);
    return out;
  }

  async postureCheckPolicies(postureCheckId: string): Promise<string[]> {
    const rows = await queryRows<{ id: string }>(
      this.db,
      'select policy_id as id from service_policy_posture_checks where posture_check_id = $1',
      [postureCheckId],
    );
    return rows.map((r) => r.id);
  }

  async accessPairs(of: { identityIds?: string[]; serviceIds?: string[] }, limit: number): Promise<AccessPair[]> {
    const { where, params } = conditions([
      ['identity_id', of.identityIds],
      ['service_id', of.serviceIds],
    ]);
    const rows = await queryRows<{ identity_id: string; service_id: string; dial: boolean; bind: boolean }>(
      this.db,
      `select identity_id, service_id, dial, bind from identity_services where ${where} limit ${Math.trunc(limit)}`,
      params,
    );
    return rows.map((r) => ({ identityId: r.identity_id, serviceId: r.service_id, dial: r.dial, bind: r.bind }));
  }

  private async routers(
    view: string,
    column: string,
    ids: string[] | undefined,
    routers: string[] | undefined,
    limit: number,
  ) {
    const { where, params } = conditions([
      [column, ids],
      ['edge_router_id', routers],
    ]);
    const rows = await queryRows<{ id: string; edge_router_id: string }>(
      this.db,
      `select ${column} as id, edge_router_id from ${view} where ${where} limit ${Math.trunc(limit)}`,
      params,
    );
    return rows.map((r): RouterLink => ({ id: r.id, edgeRouterId: r.edge_router_id }));
  }

  identityRouters(of: { identityIds?: string[]; edgeRouterIds?: string[] }, limit: number): Promise<RouterLink[]> {
    return this.routers('identity_edge_routers', 'identity_id', of.identityIds, of.edgeRouterIds, limit);
  }

  serviceRouters(of: { serviceIds?: string[]; edgeRouterIds?: string[] }, limit: number): Promise<RouterLink[]> {
    return this.routers('service_edge_routers', 'service_id', of.serviceIds, of.edgeRouterIds, limit);
  }

  async postureLinks(of: { policyIds?: string[]; serviceIds?: string[] }, limit: number): Promise<PostureLink[]> {
    const { where, params } = conditions([
      ['ps.policy_id', of.policyIds],
      ['ps.service_id', of.serviceIds],
    ]);
    const rows = await queryRows<{ service_id: string; policy_id: string; type: 'Dial' | 'Bind'; check_id: string }>(
      this.db,
      `select ps.service_id, ps.policy_id, ps.type, pc.posture_check_id as check_id
         from service_policy_services ps
         join service_policy_posture_checks pc on pc.policy_id = ps.policy_id
        where ${where} limit ${Math.trunc(limit)}`,
      params,
    );
    return rows.map((r) => ({
      serviceId: r.service_id,
      policyId: r.policy_id,
      type: r.type,
      postureCheckId: r.check_id,
    }));
  }

  async names(of: WhatIfNamed, ids: string[]): Promise<Map<string, string>> {
    if (ids.length === 0) return new Map();
    const rows = await queryRows<{ id: string; name: string }>(
      this.db,
      `select id, name from ${nameTables[of]} id = any($1::text[])`,
      [ids],
    );
    return new Map(rows.map((r) => [r.id, r.name]));
  }
}

/** Events of the sandbox: the domain emits them as for a real change, and they go nowhere. */
const discarded: EventSink = { emit: async () => undefined };

/** Thrown to end the sandbox's transaction with a rollback once its answer is ready. */
class RolledBack extends Error {}

/** A statement of a what-if running longer than this ends it (it holds the derivation lock meanwhile). */
const statementTimeoutMs = 30_000;

/**
 * What-ifs of one process run one at a time, the others waiting here — not on a pooled connection
 * in front of the derivation lock, where a burst would take every connection from the service's
 * other requests. Past `maxWaiting` waiting, one more is refused (429) rather than queued.
 */
const maxWaiting = 8;

function oneAtATime(): <T>(fn: () => Promise<T>) => Promise<T> {
  let tail: Promise<unknown> = Promise.resolve();
  /** The one running and those waiting. */
  let pending = 0;
  return async <T>(fn: () => Promise<T>): Promise<T> => {
    if (pending > maxWaiting) throw new ApiError('SERVER_TOO_MANY_REQUESTS');
    pending++;
    const turn = tail.then(fn, fn).finally(() => pending--);
    tail = turn.catch(() => undefined);
    return turn;
  };
}

/**
 * The what-if sandbox on a database, one what-if at a time per process (`oneAtATime`): one
 * transaction that takes the derivation lock first (so no other derivation moves the links while
 * the answer is computed), marks a savepoint that `rewind` returns to, binds the engine to it, and
 * is rolled back whatever `fn` does. The engine's events go to a sink that keeps nothing (no outbox
 * row, no NOTIFY: those are written at commit, which never comes), nothing records positions for
 * read-your-writes and no relay is kicked.
 */
export function whatIfSandbox(
  database: Database,
  /** Takes the access derivation's lock in the transaction (`AccessLinks.lock`). */
  lockDerivation: (tx: Db) => Promise<void>,
  bind: (tx: Db, events: EventSink) => Omit<WhatIfEngine, 'rewind'>,
): WhatIfSandbox {
  const queue = oneAtATime();
  const sandboxed = async <T>(fn: (engine: WhatIfEngine) => Promise<T>): Promise<T> => {
    let answer: { value: T } | undefined;
    try {
      await database.transaction(async (tx) => {
        await queryRows(tx, `set local statement_timeout = ${statementTimeoutMs}`);
        await lockDerivation(tx);
        await queryRows(tx, 'savepoint what_if');
        const engine: WhatIfEngine = {
          ...bind(tx, discarded),
          rewind: async () => {
            await queryRows(tx, 'rollback to savepoint what_if');
          },
        };
        answer = { value: await fn(engine) };
        throw new RolledBack('what-if: rolled back');
      });
    } catch (err) {
      if (!(err instanceof RolledBack) || !answer) throw err;
    }
    return answer!.value;
  };
  return (fn) => queue(() => sandboxed(fn));
}
