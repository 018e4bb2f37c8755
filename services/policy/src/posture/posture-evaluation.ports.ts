import type { IdentityPostureData } from './posture-data.domain.ts';
import type { PostureCheck } from './posture-checks.domain.ts';

/**
 * What edge sessions and service views need of posture (ZITI-FACTS §6.3, §10.1): for a caller's API
 * session and a service, each service policy that grants it and how the posture checks it names
 * fare against the posture data of that API session. Implemented by the posture evaluation
 * (posture-evaluation.domain.ts), which reads through `PostureEvaluationStore` (the posture data store).
 */

/** One `postureQuery` of the spec (a check as the client must satisfy it), with `isPassing`. */
export type PostureQuery = Record<string, unknown> & { id: string; isPassing: boolean; queryType: string };

/** One granting service policy and its checks (spec `postureQueries`). */
export interface PolicyPostureResult {
  policyId: string;
  policyType: 'Dial' | 'Bind';
  isPassing: boolean;
  postureQueries: PostureQuery[];
}

/** Why a policy's checks failed, as the reference reports it (`INVALID_POSTURE` cause, failed service requests). */
export interface PolicyPostureFailure {
  policyId: string;
  policyName: string;
  checks: {
    postureCheckId: string;
    postureCheckName: string;
    postureCheckType: string;
    actualValue: unknown;
    expectedValue: unknown;
    /** MFA checks: the spec's `postureChecksFailureMfaCriteria`. */
    criteria?: unknown;
    /** PROCESS_MULTI checks: the check's semantic. */
    semantic?: string;
  }[];
}

export interface PostureCaller {
  identityId: string;
  apiSessionId: string;
}

export interface PostureEvaluator {
  /**
   * For each service and each service policy granting it to the identity (of `type` when given):
   * whether that policy's posture checks pass for the API session. Services without a granting
   * policy are absent. While no posture check exists at all, synthetic passing entries per
   * permission (ZITI-FACTS §6.3) are the service view's business, not this one's.
   */
  evaluate(
    caller: PostureCaller,
    serviceIds: string[],
    type?: 'Dial' | 'Bind',
  ): Promise<Map<string, PolicyPostureResult[]>>;
  /** The failure data of the policies of `type` that grant the service, for a refused session. */
  failures(caller: PostureCaller, serviceId: string, type: 'Dial' | 'Bind'): Promise<PolicyPostureFailure[]>;
  /** Whether any posture check exists in the whole system. */
  anyCheckExists(): Promise<boolean>;
}

/** What the posture evaluation reads: a service policy granting a service to an identity. */
export interface GrantingServicePolicy {
  serviceId: string;
  policyId: string;
  policyName: string;
  type: 'Dial' | 'Bind';
  /** Whether the policy selects any posture check (its checks are read only then). */
  hasChecks: boolean;
}

export interface PostureEvaluationStore {
  anyCheckExists(): Promise<boolean>;
  /** The Dial/Bind policies (of `type` when given) granting the services to the identity, by policy id. */
  grantingPolicies(identityId: string, serviceIds: string[], type?: 'Dial' | 'Bind'): Promise<GrantingServicePolicy[]>;
  /** The posture checks each policy selects (its derived links), by name. */
  checksOfPolicies(policyIds: string[]): Promise<Map<string, PostureCheck[]>>;
  postureData(identityId: string): Promise<IdentityPostureData>;
}

export type PostureEvaluationReader = <T>(fn: (store: PostureEvaluationStore) => Promise<T>) => Promise<T>;
