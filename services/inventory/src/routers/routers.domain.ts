import { ApiError, type EdgeRouterState, inventoryEventTypes } from '@ziti/contracts';
import { shortId } from '@ziti/platform/ids';
import type { ListInput, ListPage, RoleFilter, Router, RouterEnrollment, RouterKind } from '../shared/model.domain.ts';
import { assertRoleAttributes, assertUint16, mapOrEmpty, presentIn, requireName } from '../shared/rules.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';
import { removeTerminatorsOf } from '../terminators/terminator-events.domain.ts';
import type { RouterEnrollments } from './routers.ports.ts';

export interface RouterInput {
  name?: string | null;
  cost?: number | null;
  noTraversal?: boolean | null;
  disabled?: boolean | null;
  tags?: Record<string, unknown> | null;
  /** Edge routers only. */
  isTunnelerEnabled?: boolean | null;
  roleAttributes?: string[] | null;
  appData?: Record<string, unknown> | null;
}

export const noRouterEnrollments: RouterEnrollments = {
  issue: async () => null,
  revoke: async () => undefined,
  pending: async () => new Map(),
};

export function edgeRouterState(r: Router): EdgeRouterState {
  return {
    id: r.id,
    name: r.name,
    roleAttributes: r.roleAttributes,
    isTunnelerEnabled: r.isTunnelerEnabled,
    isVerified: r.isVerified,
    disabled: r.disabled,
    noTraversal: r.noTraversal,
    cost: r.cost,
    fingerprint: r.fingerprint,
    hostname: r.hostname,
    supportedProtocols: r.supportedProtocols,
    appData: r.appData,
    tags: r.tags,
    createdAt: r.createdAt.toISOString(),
    updatedAt: r.updatedAt.toISOString(),
  };
}

export async function emitEdgeRouterEvent(
  s: InventoryStores,
  what: 'created' | 'updated' | 'deleted',
  router: Router,
): Promise<void> {
  const def =
    what === 'created'
      ? inventoryEventTypes.edgeRouterCreated
      : what === 'updated'
        ? inventoryEventTypes.edgeRouterUpdated
        : inventoryEventTypes.edgeRouterDeleted;
  await s.events.emit(def, edgeRouterState(router));
}

const entityName: Record<RouterKind, string> = { edge: 'edgeRouter', transit: 'router' };

export async function loadRouter(
  s: InventoryStores,
  id: string,
  kind?: RouterKind,
  forUpdate = false,
): Promise<Router> {
  const router = await s.routers.get(id, kind, { forUpdate });
  if (!router) throw ApiError.notFound(entityName[kind ?? 'transit'], id);
  return router;
}

/**
 * Edge routers (`/edge-routers`) and transit routers (`/routers`, `/transit-routers`): one name
 * index, one id space. Edge router changes are announced (`edgeRouter.*`) for policy's read model
 * and auth's router identities; an edge router is created together with its `erott` enrollment.
 * pki-enrollment owns the enrollments and is only ever asked with no transaction open here: it
 * calls inventory back while enrolling a router (docs/adr/0007).
 */
export class RouterService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly enrollments: RouterEnrollments = noRouterEnrollments,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /** `kind` undefined: every router (the fabric paths `/routers`, `/transit-routers` list edge routers too). */
  list(kind: RouterKind | undefined, input: ListInput, roleFilter?: RoleFilter): Promise<ListPage<Router>> {
    return this.work((s) => s.routers.list(kind, input, roleFilter));
  }

  get(kind: RouterKind | undefined, id: string): Promise<Router> {
    return this.work((s) => loadRouter(s, id, kind));
  }

  /** Routers of `kind` (undefined: any) in the order of `ids`, each once; an id no such router has is left out. */
  async getMany(kind: RouterKind | undefined, ids: string[]): Promise<Router[]> {
    if (ids.length === 0) return [];
    const found = new Map((await this.work((s) => s.routers.getMany(ids, kind))).map((r) => [r.id, r]));
    return [...new Set(ids)].flatMap((id) => found.get(id) ?? []);
  }

  async create(kind: RouterKind, input: RouterInput): Promise<Router> {
    const now = this.now();
    const router: Router = {
      id: shortId(),
      kind,
      name: requireName(input.name),
      cost: assertUint16(input.cost, 'cost'),
      noTraversal: input.noTraversal ?? false,
      disabled: input.disabled ?? false,
      isVerified: false,
      isTunnelerEnabled: kind === 'edge' ? (input.isTunnelerEnabled ?? false) : false,
      fingerprint: null,
      certPem: null,
      unverifiedFingerprint: null,
      unverifiedCertPem: null,
      roleAttributes: kind === 'edge' ? assertRoleAttributes(input.roleAttributes) : [],
      appData: kind === 'edge' ? mapOrEmpty(input.appData) : {},
      hostname: '',
      supportedProtocols: {},
      versionInfo: null,
      tags: mapOrEmpty(input.tags),
      createdAt: now,
      updatedAt: now,
    };
    // pki-enrollment issues the router's enrollment first (no transaction is held while asking it,
    // docs/adr/0007); if the router then does not commit, the enrollment is taken back. One left
    // behind (the compensation failed too) can never be used: inventory does not know its router.
    await this.enrollments.issue(router.id, kind);
    try {
      await this.work(async (s) => {
        await s.routers.insert(router);
        if (kind === 'edge') await emitEdgeRouterEvent(s, 'created', router);
      });
    } catch (err) {
      await this.enrollments.revoke(router.id).catch(() => undefined);
      throw err;
    }
    return router;
  }

  /** `kind` undefined: any router, through the fabric paths (which set only the fields every router has). */
  async update(kind: RouterKind | undefined, id: string, input: RouterInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.work(async (s) => {
      const current = await loadRouter(s, id, kind, true);
      const has = presentIn(input, mode);
      const next: Router = { ...current, updatedAt: this.now() };
      if (has('name')) next.name = requireName(input.name);
      if (has('cost')) next.cost = assertUint16(input.cost, 'cost');
      if (has('noTraversal')) next.noTraversal = input.noTraversal ?? false;
      if (has('disabled')) next.disabled = input.disabled ?? false;
      if (has('tags')) next.tags = mapOrEmpty(input.tags);
      if (kind === 'edge') {
        if (has('isTunnelerEnabled')) next.isTunnelerEnabled = input.isTunnelerEnabled ?? false;
        if (has('roleAttributes')) next.roleAttributes = assertRoleAttributes(input.roleAttributes);
        if (has('appData')) next.appData = mapOrEmpty(input.appData);
      }
      await s.routers.update(next);
      if (current.kind === 'edge') await emitEdgeRouterEvent(s, 'updated', next);
    });
  }

  /**
   * Its terminators (each announced), presence and pending enrollment go with it; its router
   * identity leaves through the event. The enrollment is revoked once the router is gone (no
   * transaction is held while asking pki-enrollment); should that fail, the enrollment can no
   * longer be used (its router is unknown) and the data-integrity fix removes it.
   */
  async delete(kind: RouterKind | undefined, id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await loadRouter(s, id, kind, true);
      await removeTerminatorsOf(s, { routerId: id }, this.now());
      await s.routers.delete(id);
      if (current.kind === 'edge') await emitEdgeRouterEvent(s, 'deleted', { ...current, updatedAt: this.now() });
    });
    await this.enrollments.revoke(id).catch(() => undefined);
  }

  /** The pending enrollments of routers that are not verified yet (shown with them). */
  async pendingEnrollments(routers: Router[]): Promise<Map<string, RouterEnrollment>> {
    const unverified = routers.filter((r) => !r.isVerified).map((r) => r.id);
    return unverified.length === 0 ? new Map() : this.enrollments.pending(unverified);
  }

  /**
   * Back to "awaiting enrollment" (ZITI-FACTS §5.1): the certificates stop being accepted, a new
   * enrollment (and JWT) replaces any pending one; every other property stays. The enrollment is
   * issued first, with no transaction held (pki-enrollment waits for an enrollment of the router
   * that is under way, so this lands after it), then the router changes.
   */
  async reEnroll(id: string): Promise<void> {
    const before = await this.work((s) => loadRouter(s, id, 'edge'));
    if (!(await this.enrollments.issue(id, 'edge'))) {
      throw new ApiError('FAILED_ER_REENROLLMENT', {
        code: 'UNHANDLED',
        message: 'no enrollment could be issued for the router',
      });
    }
    try {
      await this.work(async (s) => {
        const current = await loadRouter(s, id, 'edge', true);
        const next: Router = {
          ...current,
          isVerified: false,
          fingerprint: null,
          certPem: null,
          unverifiedFingerprint: null,
          unverifiedCertPem: null,
          updatedAt: this.now(),
        };
        await s.routers.update(next);
        await emitEdgeRouterEvent(s, 'updated', next);
      });
    } catch (err) {
      // A router that is gone, or still verified, must not keep the new enrollment (best effort:
      // the data-integrity fix removes one of a router that is gone). One that was awaiting
      // enrollment keeps it: it replaced the one it had.
      const gone = err instanceof ApiError && err.code === 'NOT_FOUND';
      if (gone || before.isVerified) await this.enrollments.revoke(id).catch(() => undefined);
      throw err;
    }
  }

  /**
   * The router completed its enrollment (pki-enrollment signed its CSRs): it is verified with this
   * client certificate. Only an unverified router can be enrolled.
   */
  async markEnrolled(input: {
    routerId: string;
    kind: RouterKind;
    fingerprint: string;
    certPem: string;
  }): Promise<void> {
    await this.work(async (s) => {
      const current = await loadRouter(s, input.routerId, input.kind, true);
      if (current.isVerified)
        throw new ApiError('CAN_NOT_UPDATE_ROUTER', {
          code: 'UNHANDLED',
          message: `router ${current.id} is already enrolled`,
        });
      const next: Router = {
        ...current,
        isVerified: true,
        fingerprint: input.fingerprint,
        certPem: input.certPem,
        unverifiedFingerprint: null,
        unverifiedCertPem: null,
        updatedAt: this.now(),
      };
      await s.routers.update(next);
      if (current.kind === 'edge') await emitEdgeRouterEvent(s, 'updated', next);
    });
  }

  /** Any router (edge or transit) by id, or null: what fabric admits a connecting router by. */
  find(id: string): Promise<Router | null> {
    return this.work((s) => s.routers.get(id));
  }

  /** The verified router whose current client certificate this is, if any. */
  async byFingerprint(fingerprint: string): Promise<Router | null> {
    return this.work((s) => s.routers.findByFingerprint(fingerprint));
  }

  /**
   * A router extended its certificates: the new client certificate replaces the one it extended
   * with, which stops being accepted at once. Refused when that one is no longer current (a
   * concurrent extension or a re-enrollment won).
   */
  async changeCertificate(input: {
    routerId: string;
    previousFingerprint: string;
    fingerprint: string;
    certPem: string;
  }): Promise<void> {
    await this.work(async (s) => {
      const current = await loadRouter(s, input.routerId, undefined, true);
      if (!current.isVerified || current.fingerprint !== input.previousFingerprint) {
        throw new ApiError('UNAUTHORIZED', {
          code: 'UNAUTHORIZED',
          message: "the certificate is no longer the router's current certificate",
        });
      }
      const next: Router = {
        ...current,
        fingerprint: input.fingerprint,
        certPem: input.certPem,
        updatedAt: this.now(),
      };
      await s.routers.update(next);
      if (current.kind === 'edge') await emitEdgeRouterEvent(s, 'updated', next);
    });
  }
}
