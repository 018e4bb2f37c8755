import {
  type ApiSessionPosture,
  type IdentityPostureData,
  type ProcessData,
  mfaPromptGraceSeconds,
  passedOnEvent,
  zeroTime,
} from './posture-data.domain.ts';
import { type PostureCheck, type ProcessMultiSpec, noTimeout } from './posture-checks.domain.ts';
import type {
  PolicyPostureFailure,
  PolicyPostureResult,
  PostureCaller,
  PostureEvaluationReader,
  PostureEvaluator,
  PostureQuery,
} from './posture-evaluation.ports.ts';
import { inSemVerRange, parseSemVer, parseSemVerRange } from './semver-range.domain.ts';

/**
 * Posture evaluation (ZITI-FACTS §6.3, §10.1; ziti `controller/model/posture_check_model_*.go`,
 * `service_api_model.go`, `session_manager.go EvaluatePostureForService`): each service policy that
 * grants a service passes when every posture check it selects passes against the caller's posture
 * data and API session.
 */

/** One check's outcome for one API session. */
export interface CheckOutcome {
  passing: boolean;
  timeout: number;
  timeoutRemaining: number;
  /** MFA with prompts: the last wake/unlock report the check follows (shown as the query's `updatedAt`). */
  lastUpdatedAt: Date | null;
  /** The reference's failure values for this type (spec `postureCheckFailure<Type>` minus the common fields). */
  failure: Record<string, unknown>;
}

const eqFold = (a: string, b: string) => a.toLowerCase() === b.toLowerCase();

function evaluateOs(check: Extract<PostureCheck['spec'], { typeId: 'OS' }>, pd: IdentityPostureData) {
  const failure = {
    actualValue: { type: pd.os?.type ?? '', version: pd.os?.version ?? '' },
    expectedValue: check.operatingSystems,
  };
  // The last declaration of an OS type wins; unparsable ranges are skipped.
  const valid = new Map<string, ReturnType<typeof parseSemVerRange>[]>();
  for (const os of check.operatingSystems) {
    valid.set(
      os.type.toLowerCase(),
      os.versions.map(parseSemVerRange).filter((r) => r !== undefined),
    );
  }
  let passing = false;
  const ranges = pd.os ? valid.get(pd.os.type.toLowerCase()) : undefined;
  if (pd.os && ranges) {
    if (ranges.length === 0) passing = true;
    else {
      const version = parseSemVer(pd.os.version);
      passing = version !== undefined && ranges.some((r) => inSemVerRange(r!, version));
    }
  }
  return { passing, failure };
}

function processActual(p: ProcessData | undefined) {
  return {
    hash: p?.binaryHash ?? '',
    isRunning: p?.isRunning ?? false,
    signerFingerprints: p?.signerFingerprints ?? [],
  };
}

function evaluateProcess(
  checkId: string,
  check: Extract<PostureCheck['spec'], { typeId: 'PROCESS' }>,
  pd: IdentityPostureData,
) {
  const reported = pd.processes.find((p) => p.postureCheckId === checkId);
  const failure = {
    actualValue: processActual(reported),
    expectedValue: {
      osType: check.process.osType,
      path: check.process.path,
      hashes: check.process.hashes,
      ...(check.process.signerFingerprint ? { signerFingerprint: check.process.signerFingerprint } : {}),
    },
  };
  let passing = false;
  if (reported?.isRunning) {
    const signer =
      !check.process.signerFingerprint ||
      reported.signerFingerprints.some((f) => eqFold(f, check.process.signerFingerprint));
    const hash = check.process.hashes.length === 0 || check.process.hashes.some((h) => eqFold(h, reported.binaryHash));
    passing = signer && hash;
  }
  return { passing, failure };
}

/** A reported process against one process of a PROCESS_MULTI check. */
function verifiesMulti(reported: ProcessData, wanted: ProcessMultiSpec): boolean {
  if (!reported.isRunning) return false;
  if (wanted.hashes.length > 0 && !wanted.hashes.some((h) => eqFold(h, reported.binaryHash))) return false;
  if (
    wanted.signerFingerprints.length > 0 &&
    !wanted.signerFingerprints.some((w) => reported.signerFingerprints.some((f) => eqFold(f, w)))
  )
    return false;
  return true;
}

function evaluateProcessMulti(
  check: Extract<PostureCheck['spec'], { typeId: 'PROCESS_MULTI' }>,
  pd: IdentityPostureData,
) {
  const actual = (list: ProcessData[]) => list.map((p) => ({ ...processActual(p), path: p.path }));
  const failure = (list: ProcessData[]) => ({
    semantic: check.semantic,
    actualValue: actual(list),
    expectedValue: check.processes,
  });
  if (check.semantic === 'AllOf') {
    for (const wanted of check.processes) {
      const reported = wanted.path ? pd.processByPath.get(wanted.path) : undefined;
      if (!reported) return { passing: false, failure: failure([]) };
      if (!verifiesMulti(reported, wanted)) return { passing: false, failure: failure([reported]) };
    }
    return { passing: true, failure: failure([]) };
  }
  const seen: ProcessData[] = [];
  for (const wanted of check.processes) {
    const reported = wanted.path ? pd.processByPath.get(wanted.path) : undefined;
    if (!reported) continue;
    if (verifiesMulti(reported, wanted)) return { passing: true, failure: failure([]) };
    seen.push(reported);
  }
  return { passing: false, failure: failure(seen) };
}

/** MFA (ziti `posture_check_model_mfa.go`): passed MFA, within the timeout, no unanswered wake/unlock prompt. */
function evaluateMfa(
  check: Extract<PostureCheck['spec'], { typeId: 'MFA' }>,
  session: ApiSessionPosture | undefined,
  now: Date,
) {
  const passedAt = session?.mfaPassedAt ?? null;
  const timedOut =
    passedAt !== null &&
    check.timeoutSeconds !== noTimeout &&
    passedAt.getTime() + check.timeoutSeconds * 1000 < now.getTime();
  const onWake = !check.promptOnWake || passedOnEvent(session, session?.wokenAt ?? null, now);
  const onUnlock = !check.promptOnUnlock || passedOnEvent(session, session?.unlockedAt ?? null, now);
  const passing = passedAt !== null && !timedOut && onWake && onUnlock;

  // Remaining seconds: none without a timeout; 0 before MFA; legacy clients (no SDK info is known
  // here, so every client) are not timed when the check ignores them; a recent wake/unlock shortens it.
  let remaining: number;
  if (check.timeoutSeconds === noTimeout) remaining = noTimeout;
  else if (!passedAt) remaining = 0;
  else if (check.ignoreLegacyEndpoints) remaining = noTimeout;
  else {
    remaining = Math.max(0, check.timeoutSeconds - Math.floor((now.getTime() - passedAt.getTime()) / 1000));
    if (remaining > 0) {
      for (const [prompt, at] of [
        [check.promptOnWake, session?.wokenAt ?? null],
        [check.promptOnUnlock, session?.unlockedAt ?? null],
      ] as const) {
        if (prompt && at && at > passedAt) {
          const left = Math.max(0, Math.floor(mfaPromptGraceSeconds - (now.getTime() - at.getTime()) / 1000));
          remaining = Math.min(remaining, left);
        }
      }
    }
  }

  let lastUpdatedAt: Date | null = null;
  if (session?.endpointStateAt) {
    if (check.promptOnWake && session.wokenAt) lastUpdatedAt = session.wokenAt;
    if (check.promptOnUnlock && session.unlockedAt && (!lastUpdatedAt || session.unlockedAt > lastUpdatedAt))
      lastUpdatedAt = session.unlockedAt;
  }
  const values = (v: { passedMfa: boolean; passedOnWake: boolean; passedOnUnlock: boolean; timedOut: boolean }) => v;
  const failure = {
    actualValue: values({
      passedMfa: passedAt !== null,
      passedOnWake: session ? passedOnEvent(session, session.wokenAt, now) : false,
      passedOnUnlock: session ? passedOnEvent(session, session.unlockedAt, now) : false,
      timedOut: session ? timedOut : true,
    }),
    expectedValue: values({
      passedMfa: true,
      passedOnWake: check.promptOnWake,
      passedOnUnlock: check.promptOnUnlock,
      timedOut: false,
    }),
    criteria: {
      passedMfaAt: passedAt ? passedAt.toISOString() : zeroTime,
      wokenAt: session?.wokenAt ? session.wokenAt.toISOString() : zeroTime,
      unlockedAt: session?.unlockedAt ? session.unlockedAt.toISOString() : zeroTime,
      timeoutSeconds: check.timeoutSeconds,
      timeoutRemainingSeconds: remaining,
    },
  };
  return { passing, failure, timeout: check.timeoutSeconds, timeoutRemaining: remaining, lastUpdatedAt };
}

/** One posture check against the posture data and the caller's API session. */
export function evaluateCheck(
  check: PostureCheck,
  apiSessionId: string,
  pd: IdentityPostureData,
  now: Date = new Date(),
): CheckOutcome {
  const untimed = { timeout: noTimeout, timeoutRemaining: noTimeout, lastUpdatedAt: null };
  const spec = check.spec;
  switch (spec.typeId) {
    case 'OS':
      return { ...untimed, ...evaluateOs(spec, pd) };
    case 'MAC': {
      const reported = pd.mac?.addresses ?? [];
      return {
        ...untimed,
        passing: reported.some((a) => spec.macAddresses.includes(a)),
        failure: { actualValue: reported, expectedValue: spec.macAddresses },
      };
    }
    case 'DOMAIN': {
      const name = pd.domain?.name ?? '';
      return {
        ...untimed,
        passing: pd.domain !== undefined && spec.domains.some((d) => eqFold(d, name)),
        failure: { actualValue: name, expectedValue: spec.domains },
      };
    }
    case 'PROCESS':
      return { ...untimed, ...evaluateProcess(check.id, spec, pd) };
    case 'PROCESS_MULTI':
      return { ...untimed, ...evaluateProcessMulti(spec, pd) };
    case 'MFA':
      return evaluateMfa(spec, pd.apiSessions.get(apiSessionId), now);
  }
}

/** A `postureQuery` of the spec: the check as a client must satisfy it, with its outcome. */
export function postureQueryOf(check: PostureCheck, outcome: CheckOutcome): PostureQuery {
  const updatedAt =
    outcome.lastUpdatedAt && outcome.lastUpdatedAt > check.updatedAt ? outcome.lastUpdatedAt : check.updatedAt;
  const spec = check.spec;
  return {
    id: check.id,
    createdAt: check.createdAt.toISOString(),
    updatedAt: updatedAt.toISOString(),
    tags: check.tags,
    _links: { self: { href: `./posture-checks/${check.id}` } },
    isPassing: outcome.passing,
    queryType: spec.typeId,
    timeout: outcome.timeout,
    timeoutRemaining: outcome.timeoutRemaining,
    ...(spec.typeId === 'PROCESS' ? { process: { osType: spec.process.osType, path: spec.process.path } } : {}),
    ...(spec.typeId === 'PROCESS_MULTI'
      ? { processes: spec.processes.map((p) => ({ osType: p.osType, path: p.path })) }
      : {}),
  };
}

/** The evaluator of edge sessions and service views over policy's database. */
/** No posture data: what a policy naming no check is evaluated against (nothing is read). */
const emptyPostureData: IdentityPostureData = { processes: [], processByPath: new Map(), apiSessions: new Map() };

export class PostureEvaluation implements PostureEvaluator {
  constructor(
    private readonly read: PostureEvaluationReader,
    private readonly now: () => Date = () => new Date(),
  ) {}

  anyCheckExists(): Promise<boolean> {
    return this.read((s) => s.anyCheckExists());
  }

  evaluate(
    caller: PostureCaller,
    serviceIds: string[],
    type?: 'Dial' | 'Bind',
  ): Promise<Map<string, PolicyPostureResult[]>> {
    return this.read(async (s) => {
      const out = new Map<string, PolicyPostureResult[]>();
      if (serviceIds.length === 0) return out;
      const granting = await s.grantingPolicies(caller.identityId, serviceIds, type);
      if (granting.length === 0) return out;
      const withChecks = [...new Set(granting.filter((g) => g.hasChecks).map((g) => g.policyId))];
      const checks = withChecks.length > 0 ? await s.checksOfPolicies(withChecks) : new Map<string, PostureCheck[]>();
      // Posture data is read only when a granting policy names a check (the common case names none).
      const pd = [...checks.values()].some((list) => list.length > 0)
        ? await s.postureData(caller.identityId)
        : emptyPostureData;
      const now = this.now();
      const outcomes = new Map<string, CheckOutcome>();
      const outcome = (c: PostureCheck) => {
        let o = outcomes.get(c.id);
        if (!o) outcomes.set(c.id, (o = evaluateCheck(c, caller.apiSessionId, pd, now)));
        return o;
      };
      for (const g of granting) {
        const queries = (checks.get(g.policyId) ?? []).map((c) => postureQueryOf(c, outcome(c)));
        const list = out.get(g.serviceId) ?? [];
        list.push({
          policyId: g.policyId,
          policyType: g.type,
          isPassing: queries.every((q) => q.isPassing),
          postureQueries: queries,
        });
        out.set(g.serviceId, list);
      }
      return out;
    });
  }

  /**
   * The failures of the `type` policies granting the service (ZITI-FACTS §10.1): empty when no such
   * policy exists or one of them passes (the session is allowed); otherwise one entry per policy,
   * each with its failing checks in the reference's failure shape (`postureCheckFailure<Type>`:
   * `actualValue`, `expectedValue`, and `criteria` for MFA, `semantic` for PROCESS_MULTI).
   */
  failures(caller: PostureCaller, serviceId: string, type: 'Dial' | 'Bind'): Promise<PolicyPostureFailure[]> {
    return this.read(async (s) => {
      const granting = await s.grantingPolicies(caller.identityId, [serviceId], type);
      if (granting.length === 0) return [];
      const [checks, pd] = await Promise.all([
        s.checksOfPolicies(granting.map((g) => g.policyId)),
        s.postureData(caller.identityId),
      ]);
      const now = this.now();
      const out: PolicyPostureFailure[] = [];
      for (const g of granting) {
        const failed = [];
        for (const c of checks.get(g.policyId) ?? []) {
          const o = evaluateCheck(c, caller.apiSessionId, pd, now);
          if (o.passing) continue;
          failed.push({
            postureCheckId: c.id,
            postureCheckName: c.name,
            postureCheckType: c.spec.typeId,
            actualValue: o.failure.actualValue,
            expectedValue: o.failure.expectedValue,
            ...(o.failure.criteria === undefined ? {} : { criteria: o.failure.criteria }),
            ...(typeof o.failure.semantic === 'string' ? { semantic: o.failure.semantic } : {}),
          });
        }
        if (failed.length === 0) return [];
        out.push({ policyId: g.policyId, policyName: g.policyName, checks: failed });
      }
      return out;
    });
  }
}
