import type {
  CreateTerminatorReply,
  CreateTerminatorRequest,
  DialTargets,
  DialTerminator,
  SessionUseVerdict,
} from '@ziti/contracts';

/** What fabric needs of inventory for terminators and dials. */
export interface TerminatorOwner {
  create(request: CreateTerminatorRequest): Promise<CreateTerminatorReply>;
  remove(routerId: string, ids: string[]): Promise<string[]>;
  dialTargets(serviceId: string): Promise<DialTargets>;
  ofRouter(routerId: string): Promise<DialTerminator[]>;
}

/** What fabric needs of policy, which owns edge sessions and who may use what. */
export interface SessionAuthority {
  authorize(token: string, type: 'Dial' | 'Bind', routerId: string): Promise<SessionUseVerdict>;
}
