import {
  ApiError,
  type CallOwner,
  type Caller,
  type OperationKey,
  type OperationKeyOf,
  type OperationReply,
  type OperationRequest,
  type OperationRequestOf,
  type Owner,
  createdEnvelope,
  detailEnvelope,
  emptyEnvelope,
  listEnvelope,
  operationRequestSchema,
  queueGroup,
  subjects,
} from '@ziti/contracts';
import type { Bus, Served } from './bus/bus.ts';
import { setRequestMeta } from './causality.ts';
import type { CallTable } from './call.ts';
import { type IdempotentReplies, requestFingerprint, tokenScope } from './db/idempotency.ts';
import type { Logger } from './logger.ts';

/**
 * The handler of operation `K` (a union: of each of them) inside its owning service. Its request's
 * `body` and `query` are typed as the gateway decoded them against the operation's schemas: the
 * gateway is the one place input is validated (docs/adr/0001), and the owner trusts it rather than
 * decoding again (a second parse could only disagree where the gateway's go-swagger rules, e.g.
 * dropping nulls, differ from a plain parse).
 */
export type OperationHandler<K extends OperationKey = OperationKey> = (
  request: OperationRequestOf<K>,
) => Promise<OperationReply>;

/**
 * The entry of an operation its owner deliberately leaves unimplemented: it answers NOT_IMPLEMENTED
 * (501), as a key without a handler would, but the table still names every operation.
 */
export const notImplemented: unique symbol = Symbol('notImplemented');
export type NotImplemented = typeof notImplemented;

/** Handlers of the operations `K`, one entry each. */
export type OperationHandlerMap<K extends OperationKey> = { [P in K]: OperationHandler<P> | NotImplemented };

/**
 * `OperationHandlers<'auth'>`: auth's table, which the compiler checks covers exactly auth's
 * operations, each handler typed by its key. `OperationHandlers` alone: any service's table, as
 * `serveOperations` dispatches it.
 */
export type OperationHandlers<O extends Exclude<Owner, 'gateway'> = never> = [O] extends [never]
  ? { readonly [key: string]: ((request: never) => Promise<OperationReply>) | NotImplemented | undefined }
  : OperationHandlerMap<OperationKeyOf<O>>;

/**
 * A part of an owner's table (a transport file's operations): `satisfies OperationHandlersPart<'policy'>`
 * types each handler by its key and refuses a key that is not the owner's, keeping the keys given.
 */
export type OperationHandlersPart<O extends Exclude<Owner, 'gateway'>> = Partial<OperationHandlers<O>>;

/**
 * Serves every operation of a service on one wildcard subject with the service's queue group.
 * An operation without a handler answers NOT_IMPLEMENTED (501), so the gateway can tell "not
 * built yet" from "service down" (no responders).
 */
export function serveOperations(
  bus: Bus,
  owner: Owner,
  handlers: OperationHandlers,
  logger: Logger,
  /** Waits until this service has applied the caller's own writes (read-your-writes, docs/adr/0008). */
  waitFor?: (after: Record<string, number> | undefined) => Promise<unknown>,
  /** Answers a write repeated with its `Idempotency-Key` from the first outcome (db/idempotency.ts). */
  idempotency?: IdempotentReplies,
): Served {
  const prefix = subjects.operations(owner).slice(0, -1);
  return bus.serve(subjects.operations(owner), queueGroup(owner), async (payload, subject) => {
    const key = subject.slice(prefix.length);
    const handler = handlers[key];
    if (!handler || handler === notImplemented)
      throw new ApiError('NOT_IMPLEMENTED', { code: 'NOT_IMPLEMENTED', message: `${key} is not implemented` });
    const parsed = operationRequestSchema.safeParse(payload);
    if (!parsed.success) {
      logger.error({ subject, issues: parsed.error.issues.slice(0, 3) }, 'malformed operation request');
      throw new ApiError('UNHANDLED', 'malformed operation request');
    }
    const { requestId, remoteAddress, caller } = parsed.data;
    setRequestMeta({
      requestId,
      operation: key,
      remoteAddress,
      ...(caller ? { identityId: caller.identityId, apiSessionId: caller.apiSessionId } : {}),
    });
    if (parsed.data.after && waitFor) await waitFor(parsed.data.after);
    // The subject names the operation, and the gateway validated the input against its schemas.
    const run = () => handler(parsed.data as never);
    const idempotencyKey = parsed.data.idempotencyKey;
    if (!idempotency || !idempotencyKey) return run();
    const scope = caller ? caller.identityId : tokenScope(parsed.data);
    if (!scope) return run();
    const claim = { caller: scope, key: idempotencyKey, operation: key };
    return idempotency.answer({ ...claim, fingerprint: requestFingerprint(key, parsed.data) }, run);
  });
}

/** Serves service-to-service calls on `ziti.rpc.<owner>.call.<action>` (a table built by `callHandlers`). */
export function serveCalls(bus: Bus, owner: CallOwner, handlers: CallTable): Served {
  const prefix = subjects.calls(owner).slice(0, -1);
  return bus.serve(subjects.calls(owner), queueGroup(owner), async (payload, subject) => {
    const action = subject.slice(prefix.length);
    const handler = handlers[action];
    if (!handler)
      throw new ApiError('NOT_IMPLEMENTED', { code: 'NOT_IMPLEMENTED', message: `${action} is not served` });
    return handler(payload);
  });
}

export const reply = {
  ok: (data: unknown, status = 200): OperationReply => ({ status, body: detailEnvelope(data) }),
  json: (body: unknown, status = 200): OperationReply => ({ status, body }),
  created: (id: string, collection: string): OperationReply => ({ status: 201, body: createdEnvelope(id, collection) }),
  empty: (status = 200): OperationReply => ({ status, body: emptyEnvelope() }),
  raw: (
    contentType: string,
    content: string | Uint8Array,
    status = 200,
    headers?: Record<string, string>,
  ): OperationReply => ({
    status,
    contentType,
    rawBody: Buffer.from(content).toString('base64'),
    ...(headers ? { headers } : {}),
  }),
};

/** One page of a list (a domain `ListPage`): its items and what `meta` says of it. */
export interface Page<T> {
  items: T[];
  totalCount: number;
  pagination: { limit: number; offset: number };
  /** Omitted from `meta` when empty or absent. */
  filterableFields?: readonly string[];
}

/**
 * The list envelope (ZITI-FACTS §3.1) of one page, each item rendered by `detail` (as it is
 * without one; a page rendered as a whole, or asynchronously, is `{ ...page, items: rendered }`).
 */
export function pageEnvelope<T>(page: Page<T>, detail?: (item: T) => unknown) {
  const pagination = { ...page.pagination, totalCount: page.totalCount };
  return listEnvelope(detail ? page.items.map(detail) : page.items, pagination, page.filterableFields);
}

/** The answer of a list operation: one page (see `pageEnvelope`). */
export function pageReply<T>(page: Page<T>, detail?: (item: T) => unknown): OperationReply {
  return reply.json(pageEnvelope(page, detail));
}

export const firstQueryValue = (v: unknown): string | undefined => {
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined || first === null ? undefined : String(first);
};

/**
 * The caller of an operation that needs one (the API session the gateway established): UNAUTHORIZED
 * without. The gateway lets no anonymous caller reach such an operation; this is the owner's check.
 */
export function callerOf(request: OperationRequest): Caller {
  if (!request.caller) throw new ApiError('UNAUTHORIZED');
  return request.caller;
}

/** The `{id}` of an operation's path (empty when the path has none). */
export function pathIdOf(request: OperationRequest): string {
  return request.params.id ?? '';
}

/** The list parameters of a request (`filter`, `limit`, `offset`, `sort`), as ZitiQL lists take them. */
export function listInputOf(request: OperationRequest): {
  filter?: string;
  limit?: string;
  offset?: string;
  sort?: string;
} {
  const out: { filter?: string; limit?: string; offset?: string; sort?: string } = {};
  for (const key of ['filter', 'limit', 'offset', 'sort'] as const) {
    const value = firstQueryValue(request.query[key]);
    if (value !== undefined) out[key] = value;
  }
  return out;
}

/**
 * `roleFilter` (repeatable) and `roleSemantic` of the management lists (ZITI-FACTS §6.4).
 * The reference answers a bad semantic with a 500; a 400 field error is what a client can act on.
 */
export function roleFilterOf(request: OperationRequest): { roles: string[]; semantic: 'AllOf' | 'AnyOf' } | undefined {
  const raw = request.query.roleFilter;
  const roles = (raw === undefined ? [] : Array.isArray(raw) ? raw : [raw]).map(String);
  if (roles.length === 0) return undefined;
  const semantic = firstQueryValue(request.query.roleSemantic) ?? 'AllOf';
  if (semantic !== 'AllOf' && semantic !== 'AnyOf') {
    throw ApiError.field('roleSemantic', 'roleSemantic in query should be one of [AllOf AnyOf]', semantic);
  }
  return { roles, semantic };
}
