import type { OperationRequest } from '@ziti/contracts';
import { type OperationHandlers, callerOf, listInputOf, pageReply, pathIdOf, reply } from '@ziti/platform';
import type { AuthenticationService } from '../api-sessions/authentication.domain.ts';
import type { Authenticator } from '../shared/model.domain.ts';
import type { AuthenticatorInput, AuthenticatorService } from './authenticators.domain.ts';
import { authenticatorDetail } from './authenticators.mapper.ts';

export interface AuthenticatorOperationDeps {
  authenticators: AuthenticatorService;
  /** Names the authenticators' identities. */
  authentication: AuthenticationService;
}

type WithBody<B> = OperationRequest & { body: B };

/** Authenticators (management), an identity's authenticators, and the current identity's own (both APIs). */
export function authenticatorOperations(deps: AuthenticatorOperationDeps) {
  const { authenticators, authentication } = deps;

  async function authenticatorDetails(list: Authenticator[]) {
    const owners = await authentication.identityNames(list.map((a) => a.identityId));
    return list.map((a) => authenticatorDetail(a, owners.get(a.identityId)));
  }

  /** The current identity's own operations, the same on both APIs. */
  const own = {
    listCurrentIdentityAuthenticators: async (req: OperationRequest) => {
      const page = await deps.authenticators.listOwn(callerOf(req).identityId, listInputOf(req));
      return pageReply({ ...page, items: await authenticatorDetails(page.items) });
    },
    detailCurrentIdentityAuthenticator: async (req: OperationRequest) =>
      reply.ok(
        (await authenticatorDetails([await deps.authenticators.getOwn(callerOf(req).identityId, pathIdOf(req))]))[0],
      ),
    updateCurrentIdentityAuthenticator: async (req: WithBody<AuthenticatorInput>) => {
      await deps.authenticators.updateOwn(callerOf(req).identityId, pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    patchCurrentIdentityAuthenticator: async (req: WithBody<AuthenticatorInput>) => {
      await deps.authenticators.updateOwn(callerOf(req).identityId, pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
  };

  return {
    'client.listCurrentIdentityAuthenticators': own.listCurrentIdentityAuthenticators,
    'management.listCurrentIdentityAuthenticators': own.listCurrentIdentityAuthenticators,
    'client.detailCurrentIdentityAuthenticator': own.detailCurrentIdentityAuthenticator,
    'management.detailCurrentIdentityAuthenticator': own.detailCurrentIdentityAuthenticator,
    'client.updateCurrentIdentityAuthenticator': own.updateCurrentIdentityAuthenticator,
    'management.updateCurrentIdentityAuthenticator': own.updateCurrentIdentityAuthenticator,
    'client.patchCurrentIdentityAuthenticator': own.patchCurrentIdentityAuthenticator,
    'management.patchCurrentIdentityAuthenticator': own.patchCurrentIdentityAuthenticator,

    'management.getIdentityAuthenticators': async (req) => {
      const page = await authenticators.list(listInputOf(req), pathIdOf(req));
      return pageReply({ ...page, items: await authenticatorDetails(page.items) });
    },

    'management.listAuthenticators': async (req) => {
      const page = await authenticators.list(listInputOf(req));
      return pageReply({ ...page, items: await authenticatorDetails(page.items) });
    },
    'management.createAuthenticator': async (req) => {
      const created = await authenticators.create(req.body);
      return reply.created(created.id, 'authenticators');
    },
    'management.detailAuthenticator': async (req) =>
      reply.ok((await authenticatorDetails([await authenticators.get(pathIdOf(req))]))[0]),
    'management.updateAuthenticator': async (req) => {
      await authenticators.update(pathIdOf(req), req.body, 'replace');
      return reply.empty();
    },
    'management.patchAuthenticator': async (req) => {
      await authenticators.update(pathIdOf(req), req.body, 'patch');
      return reply.empty();
    },
    'management.deleteAuthenticator': async (req) => {
      await authenticators.delete(pathIdOf(req));
      return reply.empty();
    },
  } satisfies Partial<OperationHandlers<'auth'>>;
}
