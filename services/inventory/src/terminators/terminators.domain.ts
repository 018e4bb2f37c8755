import { createHash } from 'node:crypto';
import { ApiError, type CreateTerminatorReply, type CreateTerminatorRequest } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { loadService } from '../services/services.domain.ts';
import type {
  DialTargets,
  DialTerminator,
  ListInput,
  ListPage,
  Precedence,
  Terminator,
} from '../shared/model.domain.ts';
import { assertUint16, mapOrEmpty, presentIn } from '../shared/rules.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';
import { emitTerminatorEvent } from './terminator-events.domain.ts';
import { type TerminatorDynamicCosts, noDynamicCosts } from './terminators.ports.ts';

export interface TerminatorInput {
  service?: string | null;
  router?: string | null;
  binding?: string | null;
  address?: string | null;
  cost?: number | null;
  precedence?: string | null;
  /** Create only: the terminator's instance id and the secret that proves it (base64). */
  identity?: string | null;
  identitySecret?: string | null;
  tags?: Record<string, unknown> | null;
}

const precedences: Precedence[] = ['default', 'required', 'failed'];

function precedenceOf(value: string | null | undefined): Precedence {
  const p = value || 'default';
  if (!(precedences as string[]).includes(p))
    throw ApiError.field('precedence', `precedence in body should be one of [${precedences.join(' ')}]`, p);
  return p as Precedence;
}

function required(value: string | null | undefined, field: string): string {
  if (value === null || value === undefined || value === '')
    throw ApiError.field(field, `${field} in body is required`, value);
  return value;
}

/**
 * The identity secret only ever has to be compared (a router proving it hosts the identity), so
 * only its SHA-256 is kept.
 */
export function hashIdentitySecret(base64: string): string {
  return createHash('sha256').update(Buffer.from(base64, 'base64')).digest('hex');
}

export async function loadTerminator(s: InventoryStores, id: string, forUpdate = false): Promise<Terminator> {
  const t = await s.terminators.get(id, { forUpdate });
  if (!t) throw ApiError.notFound('terminator', id);
  return t;
}

/**
 * Why a terminator a router asks for cannot take the id of one that exists (ziti
 * `create_terminator_v2.go validateExistingTerminator`): it must be the same binding, service,
 * router and host. Undefined when it is the same terminator.
 */
export function conflictWithExisting(existing: Terminator, wanted: CreateTerminatorRequest): string | undefined {
  if (existing.binding !== wanted.binding) return 'selected id conflicts with terminator for different binding';
  if (existing.serviceId !== wanted.serviceId) return 'selected id conflicts with terminator for different service';
  if (existing.routerId !== wanted.routerId) return 'selected id conflicts with terminator for different router';
  if (existing.hostId !== wanted.hostId) return 'selected id conflicts with terminator for different identity';
  return undefined;
}

/**
 * Terminators: where a service is hosted (router, binding, address), with cost and precedence.
 * Made through the management API or by routers for the SDKs that bind services through them
 * (fabric's calls); every change is announced (`terminator.*`).
 */
export class TerminatorService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly now: () => Date = () => new Date(),
    /** Reads on the dial path (no transaction needed); defaults to `work`. */
    private readonly read: UnitOfWork = work,
    /** The router edge's dynamic costs (fabric's); none by default. */
    private readonly costs: TerminatorDynamicCosts = noDynamicCosts,
  ) {}

  list(input: ListInput): Promise<ListPage<Terminator>> {
    return this.work((s) => s.terminators.list(input));
  }

  /** A service's terminators; 404 when the service does not exist. */
  listForService(serviceId: string, input: ListInput): Promise<ListPage<Terminator>> {
    return this.work(async (s) => {
      await loadService(s, serviceId);
      return s.terminators.list(input, serviceId);
    });
  }

  get(id: string): Promise<Terminator> {
    return this.work((s) => loadTerminator(s, id));
  }

  /** The names of the services and routers the terminators refer to, by id (what their details show). */
  referenceNames(list: Terminator[]): Promise<{ services: Map<string, string>; routers: Map<string, string> }> {
    return this.work(async (s) => {
      const services = new Map(
        (await s.services.getMany([...new Set(list.map((t) => t.serviceId))])).map((x) => [x.id, x.name]),
      );
      const routers = new Map(
        (await s.routers.names([...new Set(list.map((t) => t.routerId))])).map((x) => [x.id, x.name]),
      );
      return { services, routers };
    });
  }

  /**
   * The dynamic cost of each terminator shown (the reference's `xt.GlobalCosts().GetDynamicCost`),
   * asked of the router edge once for them all; 0 where it holds none or does not answer.
   */
  dynamicCosts(list: Terminator[]): Promise<Map<string, number>> {
    if (list.length === 0) return Promise.resolve(new Map());
    return this.costs.of([...new Set(list.map((t) => t.id))]);
  }

  private async checkReferences(s: InventoryStores, serviceId: string, routerId: string): Promise<void> {
    if (!(await s.services.get(serviceId)))
      throw new ApiError('NOT_FOUND', {
        field: 'service',
        reason: `service with id ${serviceId} not found`,
        value: serviceId,
      });
    if (!(await s.routers.get(routerId)))
      throw new ApiError('NOT_FOUND', {
        field: 'router',
        reason: `router with id ${routerId} not found`,
        value: routerId,
      });
  }

  async create(input: TerminatorInput): Promise<Terminator> {
    const now = this.now();
    const terminator: Terminator = {
      id: base62Uuid(),
      serviceId: required(input.service, 'service'),
      routerId: required(input.router, 'router'),
      binding: required(input.binding, 'binding'),
      address: required(input.address, 'address'),
      instanceId: input.identity ?? '',
      instanceSecretHash: input.identitySecret ? hashIdentitySecret(input.identitySecret) : null,
      cost: assertUint16(input.cost, 'cost'),
      precedence: precedenceOf(input.precedence),
      hostId: '',
      tags: mapOrEmpty(input.tags),
      createdAt: now,
      updatedAt: now,
    };
    return this.work(async (s) => {
      await this.checkReferences(s, terminator.serviceId, terminator.routerId);
      if (!(await s.terminators.insert(terminator)))
        throw new ApiError('COULD_NOT_VALIDATE', {
          field: 'id',
          reason: `duplicate value '${terminator.id}' in unique index on terminators store`,
          value: terminator.id,
        });
      await emitTerminatorEvent(s, 'created', terminator);
      return terminator;
    });
  }

  async update(id: string, input: TerminatorInput, mode: 'replace' | 'patch'): Promise<void> {
    await this.work(async (s) => {
      const current = await loadTerminator(s, id, true);
      const has = presentIn(input, mode);
      const next: Terminator = { ...current, updatedAt: this.now() };
      if (has('service')) next.serviceId = required(input.service, 'service');
      if (has('router')) next.routerId = required(input.router, 'router');
      if (has('binding')) next.binding = required(input.binding, 'binding');
      if (has('address')) next.address = required(input.address, 'address');
      if (has('cost')) next.cost = assertUint16(input.cost, 'cost');
      if (has('precedence')) next.precedence = precedenceOf(input.precedence);
      if (has('tags')) next.tags = mapOrEmpty(input.tags);
      await this.checkReferences(s, next.serviceId, next.routerId);
      await s.terminators.update(next);
      await emitTerminatorEvent(s, 'updated', next);
    });
  }

  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      const current = await loadTerminator(s, id, true);
      await s.terminators.delete(id);
      await emitTerminatorEvent(s, 'deleted', { ...current, updatedAt: this.now() });
    });
  }

  /**
   * A router made a terminator for an SDK that binds a service through it (fabric's
   * `createTerminator`; the router chose the id). One that exists with the same binding, service,
   * router and host is kept, its cost and precedence updated if they differ; one of another is a
   * conflict. Two creates of the same id at once both succeed: the second finds the first's.
   */
  async createFromRouter(req: CreateTerminatorRequest): Promise<CreateTerminatorReply> {
    return this.work(async (s) => {
      if (!(await s.services.get(req.serviceId))) return { outcome: 'unknownService' };
      if (!(await s.routers.get(req.routerId)))
        throw new ApiError('NOT_FOUND', {
          field: 'router',
          reason: `router with id ${req.routerId} not found`,
          value: req.routerId,
        });
      const now = this.now();
      const terminator: Terminator = {
        id: req.id,
        serviceId: req.serviceId,
        routerId: req.routerId,
        binding: req.binding,
        // The reference's terminators of hosting SDKs are addressed by their id.
        address: req.id,
        instanceId: req.instanceId,
        instanceSecretHash: req.instanceSecret ? hashIdentitySecret(req.instanceSecret) : null,
        cost: req.cost,
        precedence: req.precedence,
        hostId: req.hostId,
        tags: {},
        createdAt: now,
        updatedAt: now,
      };
      // A concurrent create of the same id makes the insert find its terminator (which is then
      // kept or a conflict); one removed again meanwhile lets the next round insert.
      for (let round = 0; round < 3; round++) {
        const existing = await s.terminators.get(req.id, { forUpdate: true });
        if (existing) return this.keepExisting(s, existing, req);
        if (await s.terminators.insert(terminator, req.peerData)) {
          await emitTerminatorEvent(s, 'created', terminator);
          return { outcome: 'created', terminatorId: terminator.id };
        }
      }
      throw new ApiError('UNHANDLED', { code: 'UNHANDLED', message: `terminator ${req.id} keeps changing` });
    });
  }

  private async keepExisting(
    s: InventoryStores,
    existing: Terminator,
    req: CreateTerminatorRequest,
  ): Promise<CreateTerminatorReply> {
    const reason = conflictWithExisting(existing, req);
    if (reason) return { outcome: 'conflict', reason };
    if (existing.cost !== req.cost || existing.precedence !== req.precedence) {
      const next: Terminator = { ...existing, cost: req.cost, precedence: req.precedence, updatedAt: this.now() };
      await s.terminators.update(next);
      await emitTerminatorEvent(s, 'updated', next);
    }
    return { outcome: 'exists', terminatorId: existing.id };
  }

  /** A router removed terminators (an unbind, its SDK gone): those of `ids` that are its own; answers them. */
  async removeFromRouter(routerId: string, ids: string[]): Promise<string[]> {
    if (ids.length === 0) return [];
    return this.work(async (s) => {
      const removed = await s.terminators.deleteOfRouter(routerId, [...new Set(ids)]);
      const now = this.now();
      for (const t of removed) await emitTerminatorEvent(s, 'deleted', { ...t, updatedAt: now });
      return removed.map((t) => t.id);
    });
  }

  /** What a dial of the service needs: its facts and all its terminators, whether their routers are online. */
  dialTargets(serviceId: string): Promise<DialTargets> {
    return this.read((s) => s.terminators.dialTargets(serviceId));
  }

  /** A router's terminators (checked against what the router holds when it connects). */
  ofRouter(routerId: string): Promise<DialTerminator[]> {
    return this.read((s) => s.terminators.ofRouter(routerId));
  }
}
