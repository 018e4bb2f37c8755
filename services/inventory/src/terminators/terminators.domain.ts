import { createHash } from 'node:crypto';
import { ApiError } from '@ziti/contracts';
import { base62Uuid } from '@ziti/platform/ids';
import { loadService } from '../services/services.domain.ts';
import type { ListInput, ListPage, Precedence, Terminator } from '../shared/model.domain.ts';
import { assertUint16, mapOrEmpty, presentIn } from '../shared/rules.domain.ts';
import type { InventoryStores, UnitOfWork } from '../shared/stores.ports.ts';

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

/** Terminators: where a service is hosted (router, binding, address), with cost and precedence. */
export class TerminatorService {
  constructor(
    private readonly work: UnitOfWork,
    private readonly now: () => Date = () => new Date(),
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
      await s.terminators.insert(terminator);
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
    });
  }

  async delete(id: string): Promise<void> {
    await this.work(async (s) => {
      await loadTerminator(s, id, true);
      await s.terminators.delete(id);
    });
  }
}
