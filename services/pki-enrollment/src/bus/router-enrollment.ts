import {
  ApiError,
  type OperationRequest,
  entityStatesReplySchema,
  issueRouterEnrollmentRequestSchema,
  maintenanceActions,
  pendingRouterEnrollmentsRequestSchema,
  revokeRouterEnrollmentsRequestSchema,
  routerByFingerprintReplySchema,
  routerEnrollmentActions,
} from '@ziti/contracts';
import { type Bus, type OperationHandlers, callService, reply } from '@ziti/platform';
import type { z } from 'zod';
import type { EnrollService } from '../domain/enroll-service.ts';
import type { Enrollment } from '../domain/model.ts';
import type { RouterDirectory, RouterEnrollmentService, RouterKind } from '../domain/router-enrollment.ts';

/** inventory, the owner of routers, over the bus; when it does not answer: 503, as at the gateway. */
export class BusRouterDirectory implements RouterDirectory {
  constructor(private readonly bus: Bus) {}

  private ask(action: string, payload: unknown): Promise<unknown> {
    return callService(this.bus, 'inventory', action, payload);
  }

  async enrolled(input: { routerId: string; kind: RouterKind; fingerprint: string; certPem: string }): Promise<void> {
    await this.ask(routerEnrollmentActions.enrolled, input);
  }

  async byFingerprint(fingerprint: string) {
    const reply = await this.ask(routerEnrollmentActions.byFingerprint, { fingerprint });
    return routerByFingerprintReplySchema.parse(reply).router;
  }

  async certificateChanged(input: {
    routerId: string;
    previousFingerprint: string;
    fingerprint: string;
    certPem: string;
  }): Promise<void> {
    await this.ask(routerEnrollmentActions.certificateChanged, input);
  }

  async existingEdgeRouters(ids: string[]): Promise<Set<string>> {
    const found = new Set<string>();
    for (let i = 0; i < ids.length; i += 500) {
      const reply = await this.ask(maintenanceActions.entityStates, { type: 'edgeRouter', ids: ids.slice(i, i + 500) });
      for (const s of entityStatesReplySchema.parse(reply).states) found.add(String(s.id));
    }
    return found;
  }
}

function parse<T>(schema: z.ZodType<T>, payload: unknown, action: string): T {
  const parsed = schema.safeParse(payload);
  if (!parsed.success)
    throw new ApiError('COULD_NOT_VALIDATE', { code: 'UNHANDLED', message: `malformed ${action} request` });
  return parsed.data;
}

const info = (e: Enrollment) => ({
  id: e.id,
  token: e.token,
  jwt: e.jwt,
  createdAt: e.createdAt.toISOString(),
  expiresAt: e.expiresAt.toISOString(),
});

/** Calls pki-enrollment serves for inventory: a router's enrollment issued, revoked, shown. */
export function routerEnrollmentCalls(
  routers: RouterEnrollmentService,
): Record<string, (payload: unknown) => Promise<unknown>> {
  return {
    [routerEnrollmentActions.issue]: async (payload) => {
      const { routerId, kind } = parse(issueRouterEnrollmentRequestSchema, payload, routerEnrollmentActions.issue);
      return info(await routers.issue(routerId, kind));
    },
    [routerEnrollmentActions.revoke]: async (payload) => {
      await routers.revoke(
        parse(revokeRouterEnrollmentsRequestSchema, payload, routerEnrollmentActions.revoke).routerId,
      );
      return {};
    },
    [routerEnrollmentActions.pending]: async (payload) => {
      const { routerIds } = parse(pendingRouterEnrollmentsRequestSchema, payload, routerEnrollmentActions.pending);
      const pending = await routers.pending(routerIds);
      return { enrollments: Object.fromEntries([...pending].map(([id, e]) => [id, info(e)])) };
    },
  };
}

const jsonBody = (req: OperationRequest): Record<string, unknown> =>
  req.body !== null && typeof req.body === 'object' && !Array.isArray(req.body)
    ? (req.body as Record<string, unknown>)
    : {};
const first = (v: unknown) => (Array.isArray(v) ? v[0] : v);

/**
 * `POST /enroll/erott` (the spec's body: `clientCsr`, `serverCsr`, `token`; the token may also come
 * in the query as on `/enroll`) and `POST /enroll/extend/router` (`certCsr`, `serverCertCsr`, with
 * the router's current certificate on TLS). Both answer `{ca, cert, serverCert}`.
 */
export function routerEnrollmentOperations(routers: RouterEnrollmentService, enroll: EnrollService): OperationHandlers {
  return {
    'client.enrollErOtt': async (req) => {
      const body = jsonBody(req);
      const token = first(req.query.token) ?? body.token;
      const result = await enroll.enrollWithToken(
        {
          ...(typeof token === 'string' ? { token } : {}),
          clientCertChain: req.clientCertChain ?? [],
          body: { certCsr: body.clientCsr ?? body.certCsr, serverCertCsr: body.serverCsr ?? body.serverCertCsr },
        },
        'erott',
      );
      return result.kind === 'data' ? reply.ok(result.data) : reply.empty();
    },
    'client.extendRouterEnrollment': async (req) =>
      reply.ok(await routers.extend({ clientCertChain: req.clientCertChain ?? [], body: jsonBody(req) })),
  };
}
