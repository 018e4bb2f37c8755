import { ApiError, type ConfigState, type ServiceState } from '@ziti/contracts';
import type { ListInput, RoleFilter } from '@ziti/platform/list-page';
import type { PolicyPostureResult, PostureEvaluator } from '../posture/posture-evaluation.ports.ts';
import type { ServiceViewReader, ServiceViewStore } from './service-view.ports.ts';

/** Whose view of the services a read is: the calling identity (ZITI-FACTS §6.3). */
export interface Viewer {
  identityId: string;
  isAdmin: boolean;
  /** The caller's API session: posture queries are evaluated for it (MFA, endpoint state). */
  apiSessionId?: string;
  /** The config types the API session asked for at login (the gateway passes them with the caller). */
  sessionConfigTypes?: string[];
}

/** A service as the viewer sees it: its state and the viewer's derived access. */
export interface ServiceAccessRow {
  service: ServiceState;
  dial: boolean;
  bind: boolean;
}

/** A service policy that grants the viewer a service, with the posture checks it names. */
export interface GrantingPolicy {
  serviceId: string;
  policyId: string;
  type: 'Dial' | 'Bind';
  postureCheckRoles: string[];
}

export interface ServiceListScope {
  roleFilter?: RoleFilter;
  /**
   * Management `/services?asIdentity=<id or name>` (ZITI-FACTS §3.4): the list as that identity sees
   * it, its permissions, configs and overrides; with a role filter every matching service is listed,
   * each with that identity's permissions, as the reference does.
   */
  asIdentity?: string;
  /** Only services that use this config (`/configs/{id}/services`). */
  configId?: string;
}

export type Permission = 'Bind' | 'Dial' | 'Invalid';

/** One `postureQueries` entry (spec `postureQueries`): a granting policy and how its checks fare. */
export interface PolicyPostureQueries {
  policyId: string;
  policyType: Permission;
  isPassing: boolean;
  postureQueries: unknown[];
}

export interface ServiceView {
  service: ServiceState;
  permissions: Permission[];
  config: Record<string, Record<string, unknown>>;
  postureQueries: PolicyPostureQueries[];
}

/** `configTypes` of the service lists: `all`, or config type ids or names. */
export const allConfigTypes = 'all';

/** Bind first, then Dial; `Invalid` when neither (only administrators see such services). */
export function permissionsOf(row: { dial: boolean; bind: boolean }): Permission[] {
  const out: Permission[] = [];
  if (row.bind) out.push('Bind');
  if (row.dial) out.push('Dial');
  return out.length > 0 ? out : ['Invalid'];
}

/**
 * Every identity's view of the network's services (ZITI-FACTS §6.3, §10.2, §10.3): which services,
 * with which permissions, the data of the configs of the requested types (the identity's overrides
 * replacing the service's own config of the same type), and the posture queries of the policies
 * that grant them. Access is read from the derived tables (docs/adr/0009), never evaluated here.
 */
export class ServiceViewService {
  constructor(
    private readonly read: ServiceViewReader,
    /** Evaluates the posture queries once any posture check exists (none: synthetic passing entries). */
    private readonly posture?: Pick<PostureEvaluator, 'evaluate'>,
  ) {}

  /**
   * `configTypes` undefined: not asked for, so the API session's own (client API, ZITI-FACTS §3.4:
   * the request's override the session's).
   */
  list(
    caller: Viewer,
    input: ListInput,
    configTypes: string[] | undefined,
    scope: ServiceListScope = {},
    options: Reflecting = {},
  ) {
    return this.read(async (s) => {
      // Read first: the answer reflects at least these positions (docs/adr/0015).
      const reflects = options.reflecting ? await s.positionsReflected() : undefined;
      const viewer = scope.asIdentity === undefined ? caller : await this.masquerade(s, caller, scope);
      const page = await s.list(viewer, input, scope);
      const types = configTypes ?? (await this.sessionConfigTypes(s, viewer));
      // A roleFilter list is the reference's generic one: no synthetic posture queries there.
      const rendered = await this.render(s, viewer, page.items, types, scope.roleFilter === undefined);
      const keep = keepable(reflects, rendered.postureEvaluated, configTypes, viewer) && scope.asIdentity === undefined;
      return { ...page, items: rendered.items, ...(keep ? { reflects } : {}) };
    });
  }

  /** The viewer `asIdentity` names, keeping the caller's API session (its posture, its config types). */
  private async masquerade(s: ServiceViewStore, caller: Viewer, scope: ServiceListScope): Promise<Viewer> {
    const name = scope.asIdentity ?? '';
    const target = await s.identityByIdOrName(name);
    if (!target)
      throw new ApiError('NOT_FOUND', { code: 'UNHANDLED', message: `identity with id or name ${name} not found` });
    return { ...caller, identityId: target.id, isAdmin: scope.roleFilter !== undefined || target.isAdmin };
  }

  /**
   * The API session's config types as the caller carries them; a caller from a gateway older than
   * that (docs/adr/0017) has them read from what an older auth announced at login.
   */
  private async sessionConfigTypes(s: ServiceViewStore, viewer: Viewer): Promise<string[]> {
    if (viewer.sessionConfigTypes) return viewer.sessionConfigTypes;
    return viewer.apiSessionId ? s.apiSessionConfigTypes(viewer.apiSessionId) : [];
  }

  /** A service the viewer may not see (non-admins without a policy) is NOT_FOUND. */
  get(
    viewer: Viewer,
    id: string,
    configTypes?: string[],
    options: Reflecting = {},
  ): Promise<{ view: ServiceView; reflects?: Record<string, number> }> {
    return this.read(async (s) => {
      const reflects = options.reflecting ? await s.positionsReflected() : undefined;
      const row = await s.get(viewer, id);
      if (!row) throw ApiError.notFound('service', id);
      const types = configTypes ?? (await this.sessionConfigTypes(s, viewer));
      const rendered = await this.render(s, viewer, [row], types);
      const keep = keepable(reflects, rendered.postureEvaluated, configTypes, viewer);
      return { view: rendered.items[0]!, ...(keep ? { reflects } : {}) };
    });
  }

  /**
   * Services listed for another reason (`/identities/{id}/services`, …) as the viewer sees them: the
   * reference renders every service detail for the caller, whoever the list is about.
   */
  viewsOf(viewer: Viewer, services: ServiceState[]): Promise<ServiceView[]> {
    return this.read(async (s) => {
      const access = await s.access(
        viewer,
        services.map((x) => x.id),
      );
      const rows = services.map((service) => ({
        service,
        ...(access.get(service.id) ?? { dial: false, bind: false }),
      }));
      return this.views(s, viewer, rows, [], false);
    });
  }

  /** `/configs/{id}/services`: the services that use a config; NOT_FOUND for an unknown config. */
  listForConfig(viewer: Viewer, configId: string, input: ListInput) {
    return this.read(async (s) => {
      if (!(await s.configExists(configId))) throw ApiError.notFound('config', configId);
      const page = await s.list(viewer, input, { configId });
      return { ...page, items: await this.views(s, viewer, page.items, [], false) };
    });
  }

  /**
   * `lastChangeAt` of `/current-api-session/service-updates`: when something that changes the
   * identity's services last changed (recorded durably, so no restart loses it); before any such
   * change, when the identity was created.
   */
  lastChangeAt(viewer: Viewer): Promise<Date> {
    return this.read(async (s) => {
      const at =
        (await s.lastChange(viewer.identityId, viewer.isAdmin)) ?? (await s.identityCreatedAt(viewer.identityId));
      return at ?? new Date(0);
    });
  }

  private async views(
    s: ServiceViewStore,
    viewer: Viewer,
    rows: ServiceAccessRow[],
    configTypes: string[],
    synthetic = true,
  ): Promise<ServiceView[]> {
    return (await this.render(s, viewer, rows, configTypes, synthetic)).items;
  }

  /** The views of `rows`, and whether posture checks were evaluated for them (the clock may change those). */
  private async render(
    s: ServiceViewStore,
    viewer: Viewer,
    rows: ServiceAccessRow[],
    configTypes: string[],
    /**
     * The passing synthetic entries for services no policy with posture checks grants: the
     * reference renders them only where it computes the viewer's permissions (the service lists
     * and details), not in the lists of a relation, a config's services or a roleFilter list.
     */
    synthetic = true,
  ): Promise<{ items: ServiceView[]; postureEvaluated: boolean }> {
    if (rows.length === 0) return { items: [], postureEvaluated: false };
    const ids = rows.map((r) => r.service.id);
    const [configs, checksExist] = await Promise.all([
      this.configsOf(s, viewer, rows, configTypes),
      s.postureChecksExist(),
    ]);
    const postureEvaluated = checksExist && this.posture !== undefined;
    const evaluated = postureEvaluated
      ? await this.posture!.evaluate({ identityId: viewer.identityId, apiSessionId: viewer.apiSessionId ?? '' }, ids)
      : new Map<string, PolicyPostureResult[]>();
    const items = rows.map((r) => {
      const permissions = permissionsOf(r);
      return {
        service: r.service,
        permissions,
        config: configs.get(r.service.id) ?? {},
        postureQueries: postureQueriesOf(synthetic ? permissions : [], evaluated.get(r.service.id) ?? []),
      };
    });
    return { items, postureEvaluated };
  }

  /** `config` per service: data of its configs of the wanted types, the identity's overrides first. */
  private async configsOf(
    s: ServiceViewStore,
    viewer: Viewer,
    rows: ServiceAccessRow[],
    configTypes: string[],
  ): Promise<Map<string, Record<string, Record<string, unknown>>>> {
    const out = new Map<string, Record<string, Record<string, unknown>>>();
    if (configTypes.length === 0) return out;
    const all = configTypes.includes(allConfigTypes);
    const wanted = all ? undefined : new Set(await s.configTypeIds(configTypes));
    if (wanted && wanted.size === 0) return out;
    const overrides = await s.overrides(viewer.identityId);
    const ids = new Set<string>([...rows.flatMap((r) => r.service.configs), ...overrides.map((o) => o.configId)]);
    const configs = new Map((await s.configs([...ids])).map((c) => [c.id, c]));
    const typeNames = await s.configTypeNames([...new Set([...configs.values()].map((c) => c.configTypeId))]);
    for (const r of rows) {
      const byType = new Map<string, ConfigState>();
      for (const id of r.service.configs) {
        const c = configs.get(id);
        if (c && !byType.has(c.configTypeId)) byType.set(c.configTypeId, c);
      }
      for (const o of overrides) {
        const c = o.serviceId === r.service.id ? configs.get(o.configId) : undefined;
        if (c) byType.set(c.configTypeId, c);
      }
      const config: Record<string, Record<string, unknown>> = {};
      for (const [typeId, c] of byType) {
        if (wanted && !wanted.has(typeId)) continue;
        config[typeNames.get(typeId) ?? typeId] = c.data;
      }
      out.set(r.service.id, config);
    }
    return out;
  }
}

/** Asks a service read for the positions it reflects, so the gateway may keep it (docs/adr/0015). */
export interface Reflecting {
  reflecting?: boolean;
}

/**
 * Whether a service read may be kept until an event changes it: it says what it reflects, no
 * posture check was evaluated (their results change with the clock and with posture data, which
 * no event the gateway follows announces), and its config types came from the request or from the
 * caller (not from policy's own record of the API session).
 */
function keepable(
  reflects: Record<string, number> | undefined,
  postureEvaluated: boolean,
  configTypes: string[] | undefined,
  viewer: Viewer,
): reflects is Record<string, number> {
  return (
    reflects !== undefined &&
    !postureEvaluated &&
    (configTypes !== undefined || viewer.sessionConfigTypes !== undefined)
  );
}

/**
 * `postureQueries` (ZITI-FACTS §6.3; ziti `service_api_model.go`): one entry per service policy
 * granting the service with its evaluated checks (an empty `postureQueries` when it names none).
 * With no such entry — no posture check exists at all, or no policy grants the viewer the service
 * (administrators see every service) — one passing synthetic entry per permission.
 */
export function postureQueriesOf(permissions: Permission[], evaluated: PolicyPostureResult[]): PolicyPostureQueries[] {
  if (evaluated.length > 0) return evaluated;
  // `Invalid` (an administrator's view of a service no policy grants it) gets its entry too.
  return permissions.map((p) => ({
    policyId: `dummy ${p.toLowerCase()} policy: no posture checks defined`,
    policyType: p,
    isPassing: true,
    postureQueries: [],
  }));
}
