import {
  ApiError,
  type OperationReply,
  type OperationRequest,
  type Owner,
  createdEnvelope,
  detailEnvelope,
  emptyEnvelope,
  operationRequestSchema,
  queueGroup,
  subjects,
} from '@ziti/contracts';
import type { Bus, Served } from './bus/bus.ts';
import type { Logger } from './logger.ts';

/** The handler of one HTTP operation inside its owning service. */
export type OperationHandler = (request: OperationRequest) => Promise<OperationReply>;

/** Handlers keyed by `<api>.<operationId>` (see `operationKey`). */
export type OperationHandlers = Record<string, OperationHandler>;

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
): Served {
  const prefix = subjects.operations(owner).slice(0, -1);
  return bus.serve(subjects.operations(owner), queueGroup(owner), async (payload, subject) => {
    const key = subject.slice(prefix.length);
    const handler = handlers[key];
    if (!handler)
      throw new ApiError('NOT_IMPLEMENTED', { code: 'NOT_IMPLEMENTED', message: `${key} is not implemented` });
    const parsed = operationRequestSchema.safeParse(payload);
    if (!parsed.success) {
      logger.error({ subject, issues: parsed.error.issues.slice(0, 3) }, 'malformed operation request');
      throw new ApiError('UNHANDLED', 'malformed operation request');
    }
    if (parsed.data.after && waitFor) await waitFor(parsed.data.after);
    return handler(parsed.data);
  });
}

/** Serves service-to-service calls on `ziti.rpc.<owner>.call.<action>`. */
export function serveCalls(
  bus: Bus,
  owner: Owner,
  handlers: Record<string, (payload: unknown) => Promise<unknown>>,
): Served {
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

export const firstQueryValue = (v: unknown): string | undefined => {
  const first = Array.isArray(v) ? v[0] : v;
  return first === undefined || first === null ? undefined : String(first);
};

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
