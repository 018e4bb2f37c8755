import type { OperationReply, OperationRequest } from '@ziti/contracts';
import { listInputOf, reply } from '@ziti/platform';
import type { PolicyInput, PolicyService } from './policies.domain.ts';
import { type PolicyResource, policyDetail, policyPageReply } from './policies.mapper.ts';

/** A write of any policy kind: its create, update and patch bodies each decode to a `PolicyInput`. */
type PolicyWrite = OperationRequest & { body: PolicyInput };
type Handler<R = OperationRequest> = (req: R) => Promise<OperationReply>;

const id = (req: OperationRequest) => req.params.id ?? '';

/**
 * list/create/detail/update/patch/delete of one policy resource: parse, call the domain, map back.
 * `service` is read per request, so the operation keys exist before the service is wired. The
 * resource's transport names the operation each one serves.
 */
export function policyHandlers(
  resource: PolicyResource,
  service: () => PolicyService,
): {
  list: Handler;
  create: Handler<PolicyWrite>;
  detail: Handler;
  update: Handler<PolicyWrite>;
  patch: Handler<PolicyWrite>;
  delete: Handler;
} {
  return {
    list: async (req) => {
      const policies = service();
      return policyPageReply(resource, policies, await policies.list(listInputOf(req)));
    },
    create: async (req) => reply.created((await service().create(req.body)).id, resource.collection),
    detail: async (req) => {
      const policies = service();
      const policy = await policies.get(id(req));
      return reply.ok(policyDetail(resource, policies.spec.roleFields, policy, await policies.roleNames([policy])));
    },
    update: async (req) => {
      await service().update(id(req), req.body, 'replace');
      return reply.empty();
    },
    patch: async (req) => {
      await service().update(id(req), req.body, 'patch');
      return reply.empty();
    },
    delete: async (req) => {
      await service().delete(id(req));
      return reply.empty();
    },
  };
}
