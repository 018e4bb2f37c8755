import { ApiError } from '@ziti/contracts';
import { cleanHex } from './posture-checks.domain.ts';
import type { PostureCaller } from './posture-evaluation.ports.ts';
import type { ApiSessionDirectory, PostureDataUnitOfWork } from './posture-data.ports.ts';

/**
 * Posture data (ZITI-FACTS §6.3; ziti `controller/model/posture_response_model*.go`): what an
 * identity's clients report. OS, MAC, domain and processes belong to the identity (the last report
 * of each, processes per reported check id and per path); endpoint state (woken, unlocked) and MFA
 * belong to one API session and end with it. Kept in Postgres, so a restart loses none of it.
 */

/** When and through which API session a response was reported. */
export interface Reported {
  postureCheckId: string;
  apiSessionId: string;
  reportedAt: Date;
}
export interface OsData extends Reported {
  type: string;
  version: string;
  build: string;
}
export interface MacData extends Reported {
  addresses: string[];
}
export interface DomainData extends Reported {
  name: string;
}
export interface ProcessData extends Reported {
  path: string;
  isRunning: boolean;
  binaryHash: string;
  signerFingerprints: string[];
}

/** One API session's posture: when it passed MFA (auth's announcement) and its endpoint state. */
export interface ApiSessionPosture {
  apiSessionId: string;
  /** Whether the API session is still alive (known from auth's events). */
  live: boolean;
  mfaPassedAt: Date | null;
  wokenAt: Date | null;
  unlockedAt: Date | null;
  /** When an ENDPOINT_STATE response was last reported (null: never). */
  endpointStateAt: Date | null;
}

/** The SDK fields of a login's `sdkInfo` (spec `sdkInfo`), each only when not empty. */
export const sdkInfoFields = ['appId', 'appVersion', 'branch', 'revision', 'type', 'version'] as const;
export type SdkInfo = Partial<Record<(typeof sdkInfoFields)[number], string>>;

/** An identity's live API sessions as auth holds them, and the SDK info it last logged in with. */
export interface LiveApiSessions {
  ids: string[];
  sdkInfo: SdkInfo;
}

export interface IdentityPostureData {
  os?: OsData;
  mac?: MacData;
  domain?: DomainData;
  /** The last process response per reported posture check id, in report order. */
  processes: ProcessData[];
  /** The last process response per path (PROCESS_MULTI looks processes up by path). */
  processByPath: Map<string, ProcessData>;
  apiSessions: Map<string, ApiSessionPosture>;
}

/** One response of `POST /posture-response(-bulk)` as recorded (hex values cleaned as the reference does). */
export type PostureResponseRecord =
  | { kind: 'OS'; postureCheckId: string; type: string; version: string; build: string }
  | { kind: 'MAC'; postureCheckId: string; addresses: string[] }
  | { kind: 'DOMAIN'; postureCheckId: string; name: string }
  | {
      kind: 'PROCESS';
      postureCheckId: string;
      path: string;
      isRunning: boolean;
      binaryHash: string;
      signerFingerprints: string[];
    }
  | { kind: 'ENDPOINT_STATE'; postureCheckId: string; woken: boolean; unlocked: boolean };

/** A service whose MFA posture prompt a wake or unlock report started (`postureResponse.services`). */
export interface PromptedService {
  id: string;
  name: string;
  timeout: number;
}

/** How long after a wake or unlock a client may still answer the MFA prompt (the reference's 5 minutes). */
export const mfaPromptGraceSeconds = 300;

const str = (v: unknown) => (typeof v === 'string' ? v : '');

/** The records of the spec's posture response bodies (discriminator `typeId`; the gateway validated them). */
export function postureResponseRecords(bodies: Record<string, unknown>[]): PostureResponseRecord[] {
  const out: PostureResponseRecord[] = [];
  for (const b of bodies) {
    const postureCheckId = str(b.id);
    switch (b.typeId) {
      case 'OS':
        out.push({ kind: 'OS', postureCheckId, type: str(b.type), version: str(b.version), build: str(b.build) });
        break;
      case 'MAC':
        out.push({
          kind: 'MAC',
          postureCheckId,
          addresses: (Array.isArray(b.macAddresses) ? b.macAddresses : []).map((a) => cleanHex(String(a))),
        });
        break;
      case 'DOMAIN':
        out.push({ kind: 'DOMAIN', postureCheckId, name: str(b.domain) });
        break;
      case 'PROCESS':
        out.push({
          kind: 'PROCESS',
          postureCheckId,
          path: str(b.path),
          isRunning: b.isRunning === true,
          binaryHash: cleanHex(str(b.hash)),
          signerFingerprints: (Array.isArray(b.signerFingerprints) ? b.signerFingerprints : []).map((f) =>
            cleanHex(String(f)),
          ),
        });
        break;
      case 'ENDPOINT_STATE':
        out.push({ kind: 'ENDPOINT_STATE', postureCheckId, woken: b.woken === true, unlocked: b.unlocked === true });
        break;
      default:
        throw ApiError.field(
          'typeId',
          `typeId in body should be one of [DOMAIN ENDPOINT_STATE MAC OS PROCESS]`,
          b.typeId,
        );
    }
  }
  return out;
}

/** Go's zero time: what a date the spec requires but nothing set yet answers. */
export const zeroTime = '0001-01-01T00:00:00.000Z';
const iso = (d: Date | null | undefined) => (d ? d.toISOString() : zeroTime);

/**
 * Whether an MFA check prompting on wake (unlock) still passes: the API session passed MFA, and
 * the endpoint did not wake (unlock) after it — or did so less than the grace period ago.
 */
export function passedOnEvent(session: ApiSessionPosture | undefined, at: Date | null, now: Date): boolean {
  if (!session?.mfaPassedAt) return false;
  if (!at || at < session.mfaPassedAt) return true;
  return now.getTime() - mfaPromptGraceSeconds * 1000 < at.getTime();
}

/**
 * `GET /identities/{id}/posture-data` (spec `postureData`, ziti `posture_data_api_model.go`): the
 * identity's last OS, MAC, domain and process reports, and one entry per live API session (the
 * reference adds each at login, `SetSdkInfo`, and drops it when the session ends), whether or not it
 * reported anything: its MFA state, its endpoint state and the SDK info. Where the reference answers
 * null the spec requires a value (docs/reference-differences.md): a date nothing set yet is Go's zero
 * time, `mfa.passedAt` (which the reference never fills) when the session passed MFA, and
 * `passedOnWake`/`passedOnUnlock` as an MFA check prompting on them would judge. The SDK info is the
 * identity's last one, for every session: auth keeps none per session (the reference keeps what the
 * identity had at each login). `live` absent: the API sessions policy has records of.
 */
export function postureDataView(pd: IdentityPostureData, now: Date, live: LiveApiSessions) {
  const base = (r: Reported | undefined) => ({
    lastUpdatedAt: iso(r?.reportedAt),
    postureCheckId: r?.postureCheckId ?? '',
    timedOut: false,
  });
  const ids = live.ids;
  const apiSessionPostureData: Record<string, unknown> = {};
  // In id order, as Go's encoding/json writes a map.
  for (const id of [...new Set(ids)].sort()) {
    const s = pd.apiSessions.get(id);
    apiSessionPostureData[id] = {
      mfa: {
        apiSessionId: id,
        passedMfa: Boolean(s?.mfaPassedAt),
        passedAt: iso(s?.mfaPassedAt),
        passedOnWake: passedOnEvent(s, s?.wokenAt ?? null, now),
        passedOnUnlock: passedOnEvent(s, s?.unlockedAt ?? null, now),
      },
      endpointState: { wokenAt: iso(s?.wokenAt), unlockedAt: iso(s?.unlockedAt) },
      sdkInfo: { ...live.sdkInfo },
    };
  }
  return {
    os: { ...base(pd.os), type: pd.os?.type ?? '', version: pd.os?.version ?? '', build: pd.os?.build ?? '' },
    mac: { ...base(pd.mac), addresses: pd.mac?.addresses ?? [] },
    domain: { ...base(pd.domain), domain: pd.domain?.name ?? '' },
    processes: pd.processes.map((p) => ({
      ...base(p),
      isRunning: p.isRunning,
      binaryHash: p.binaryHash,
      signerFingerprints: p.signerFingerprints,
    })),
    apiSessionPostureData,
  };
}

/**
 * Posture responses of any authenticated caller (client `POST /posture-response`,
 * `/posture-response-bulk`) and the administrators' view of an identity's posture data. A response
 * moves the identity's service view (its posture queries), as the reference's service update does.
 */
export class PostureDataService {
  constructor(
    private readonly work: PostureDataUnitOfWork,
    private readonly read: PostureDataUnitOfWork,
    private readonly apiSessions: ApiSessionDirectory,
    private readonly now: () => Date = () => new Date(),
  ) {}

  /**
   * Records the responses for the caller's identity and API session; answers the services whose MFA
   * checks a wake or unlock report now prompts for (ziti `posture_response_router.go`), limited here
   * to the services the caller may reach.
   */
  async respond(caller: PostureCaller, bodies: Record<string, unknown>[]): Promise<PromptedService[]> {
    const records = postureResponseRecords(bodies);
    const at = this.now();
    const onWake = records.some((r) => r.kind === 'ENDPOINT_STATE' && r.woken);
    const onUnlock = records.some((r) => r.kind === 'ENDPOINT_STATE' && r.unlocked);
    return this.work(async (s) => {
      await s.data.record(caller.identityId, caller.apiSessionId, records, at);
      await s.links.markServiceUpdates({ kind: 'identities', ids: [caller.identityId] });
      if (!onWake && !onUnlock) return [];
      const session = (await s.data.load(caller.identityId)).apiSessions.get(caller.apiSessionId);
      if (!session?.mfaPassedAt) return [];
      const sinceMfa = Math.floor((at.getTime() - session.mfaPassedAt.getTime()) / 1000);
      return s.data.promptedServices(caller.identityId, onWake, onUnlock, sinceMfa + mfaPromptGraceSeconds);
    });
  }

  /**
   * The identity's posture data in the spec's nested shape, one entry per API session auth holds
   * live (a session that ended is gone at once, as in the reference; what policy still keeps of it
   * goes with auth's event); NOT_FOUND for an unknown identity.
   */
  async postureData(identityId: string) {
    const pd = await this.read(async (s) => {
      if (!(await s.data.identityExists(identityId))) throw ApiError.notFound('identity', identityId);
      return s.data.load(identityId);
    });
    return postureDataView(pd, this.now(), await this.apiSessions.liveOf(identityId));
  }
}
