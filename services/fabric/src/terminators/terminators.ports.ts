import type {
  CreateTerminatorReply,
  CreateTerminatorRequest,
  DialTargets,
  DialTerminator,
  SessionUseVerdict,
} from '@ziti/contracts';

/**
 * Who made a change through a router, for the audit trail (the reference's change context:
 * source `ctrl`, the router's address, the identity behind the session when there is one).
 */
export interface ChangeOrigin {
  /** The control-channel request, e.g. `ctrl.createTerminatorV2`. */
  operation: string;
  routerId: string;
  remoteAddress: string;
  identityId?: string;
  apiSessionId?: string;
}

/** What fabric needs of inventory for terminators and dials. */
export interface TerminatorOwner {
  create(request: CreateTerminatorRequest, origin: ChangeOrigin): Promise<CreateTerminatorReply>;
  remove(routerId: string, ids: string[], origin: ChangeOrigin): Promise<string[]>;
  dialTargets(serviceId: string): Promise<DialTargets>;
  ofRouter(routerId: string): Promise<DialTerminator[]>;
}

/** What fabric needs of policy, which owns edge sessions and who may use what. */
export interface SessionAuthority {
  authorize(token: string, type: 'Dial' | 'Bind', routerId: string): Promise<SessionUseVerdict>;
}
