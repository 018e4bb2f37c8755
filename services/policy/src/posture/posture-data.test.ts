import { authCallContracts } from '@ziti/contracts';
import { InProcessBus, callHandlers, serveCalls } from '@ziti/platform';
import { describe, expect, it } from 'vitest';
import { BusApiSessionDirectory, sdkInfoOf } from './auth-api-sessions.adapter.ts';
import {
  type ApiSessionPosture,
  type IdentityPostureData,
  type LiveApiSessions,
  PostureDataService,
  postureDataView,
  zeroTime,
} from './posture-data.domain.ts';
import type { ApiSessionDirectory, PostureDataStore, PostureDataStores } from './posture-data.ports.ts';

/**
 * `GET /identities/{id}/posture-data`'s `apiSessionPostureData` (ziti `posture_data_api_model.go`,
 * `posture_cache.go`): one entry per live API session of the identity, whether it reported anything
 * or not, with the dates and flags the spec requires where the reference answers null.
 */
const now = new Date('2026-01-01T12:00:00Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);

const session = (apiSessionId: string, s: Partial<ApiSessionPosture> = {}): [string, ApiSessionPosture] => [
  apiSessionId,
  { apiSessionId, live: true, mfaPassedAt: null, wokenAt: null, unlockedAt: null, endpointStateAt: null, ...s },
];
const data = (sessions: [string, ApiSessionPosture][] = []): IdentityPostureData => ({
  processes: [],
  processByPath: new Map(),
  apiSessions: new Map(sessions),
});
const nothingReported = (apiSessionId: string, sdkInfo: Record<string, string> = {}) => ({
  mfa: { apiSessionId, passedMfa: false, passedAt: zeroTime, passedOnWake: false, passedOnUnlock: false },
  endpointState: { wokenAt: zeroTime, unlockedAt: zeroTime },
  sdkInfo,
});

describe('postureDataView: apiSessionPostureData', () => {
  it('lists every live API session, also one that reported nothing, in id order', () => {
    const live: LiveApiSessions = { ids: ['s2', 's1'], sdkInfo: {} };
    const view = postureDataView(data(), now, live);
    expect(Object.keys(view.apiSessionPostureData)).toEqual(['s1', 's2']);
    expect(view.apiSessionPostureData).toEqual({ s1: nothingReported('s1'), s2: nothingReported('s2') });
  });

  it('shows what an API session reported and passed: MFA, wake and unlock', () => {
    const passedAt = ago(600);
    const wokenAt = ago(60);
    const pd = data([
      session('mfa', { mfaPassedAt: passedAt }),
      session('woken', { wokenAt, endpointStateAt: wokenAt }),
      session('both', { mfaPassedAt: passedAt, wokenAt: ago(30), unlockedAt: ago(400), endpointStateAt: ago(30) }),
    ]);
    const view = postureDataView(pd, now, { ids: ['mfa', 'woken', 'both', 'quiet'], sdkInfo: { type: 'go' } });
    expect(view.apiSessionPostureData).toEqual({
      both: {
        // MFA before both; the wake within the grace period, the unlock past it.
        mfa: {
          apiSessionId: 'both',
          passedMfa: true,
          passedAt: passedAt.toISOString(),
          passedOnWake: true,
          passedOnUnlock: false,
        },
        endpointState: { wokenAt: ago(30).toISOString(), unlockedAt: ago(400).toISOString() },
        sdkInfo: { type: 'go' },
      },
      mfa: {
        mfa: {
          apiSessionId: 'mfa',
          passedMfa: true,
          passedAt: passedAt.toISOString(),
          passedOnWake: true,
          passedOnUnlock: true,
        },
        endpointState: { wokenAt: zeroTime, unlockedAt: zeroTime },
        sdkInfo: { type: 'go' },
      },
      quiet: nothingReported('quiet', { type: 'go' }),
      woken: {
        mfa: {
          apiSessionId: 'woken',
          passedMfa: false,
          passedAt: zeroTime,
          passedOnWake: false,
          passedOnUnlock: false,
        },
        endpointState: { wokenAt: wokenAt.toISOString(), unlockedAt: zeroTime },
        sdkInfo: { type: 'go' },
      },
    });
  });

  it('leaves out what policy still keeps of an API session that is no longer live', () => {
    const view = postureDataView(data([session('ended', { mfaPassedAt: ago(5) })]), now, { ids: [], sdkInfo: {} });
    expect(view.apiSessionPostureData).toEqual({});
  });
});

describe('PostureDataService.postureData', () => {
  const store = (pd: IdentityPostureData, known: string[]): PostureDataStore => ({
    identityExists: async (id) => known.includes(id),
    load: async () => pd,
    record: async () => undefined,
    promptedServices: async () => [],
  });
  const service = (pd: IdentityPostureData, directory: ApiSessionDirectory, known = ['i1']) => {
    const stores = { data: store(pd, known) } as unknown as PostureDataStores;
    const uow = <T>(fn: (s: PostureDataStores) => Promise<T>) => fn(stores);
    return new PostureDataService(uow, uow, directory, () => now);
  };

  it('asks auth for the live API sessions and merges what policy keeps of them', async () => {
    const asked: string[] = [];
    const directory: ApiSessionDirectory = {
      liveOf: async (id) => {
        asked.push(id);
        return { ids: ['a', 'b'], sdkInfo: { version: '1.2.3' } };
      },
    };
    const pd = data([session('a', { mfaPassedAt: ago(10) }), session('gone', { wokenAt: ago(1) })]);
    const view = await service(pd, directory).postureData('i1');
    expect(asked).toEqual(['i1']);
    expect(Object.keys(view.apiSessionPostureData)).toEqual(['a', 'b']);
    expect(view.apiSessionPostureData.a).toMatchObject({ mfa: { passedMfa: true }, sdkInfo: { version: '1.2.3' } });
    expect(view.apiSessionPostureData.b).toEqual(nothingReported('b', { version: '1.2.3' }));
  });

  it('answers NOT_FOUND for an unknown identity without asking auth', async () => {
    const directory: ApiSessionDirectory = { liveOf: () => Promise.reject(new Error('asked')) };
    await expect(service(data(), directory).postureData('nope')).rejects.toMatchObject({ code: 'NOT_FOUND' });
  });
});

describe('BusApiSessionDirectory', () => {
  it('reads the live API sessions and the sdkInfo of the identity from auth', async () => {
    const bus = new InProcessBus();
    const asked: unknown[] = [];
    serveCalls(
      bus,
      'auth',
      callHandlers(
        {
          apiSessionIdsOf: authCallContracts.apiSessionIdsOf,
          identityDetails: authCallContracts.identityDetails,
        },
        {
          apiSessionIdsOf: async (req) => {
            asked.push(req);
            return { ids: ['s1', 's2'] };
          },
          identityDetails: async ({ ids }) => ({
            details: ids.map((id) => ({ id, sdkInfo: { type: 'ziti-sdk-golang', version: '1.0.0', branch: '' } })),
          }),
        },
      ),
    );
    expect(await new BusApiSessionDirectory(bus).liveOf('i1')).toEqual({
      ids: ['s1', 's2'],
      sdkInfo: { type: 'ziti-sdk-golang', version: '1.0.0' },
    });
    expect(asked).toEqual([{ identityId: 'i1' }]);
    await bus.close();
  });

  it('fails as auth fails (no auth: SERVICE_UNAVAILABLE)', async () => {
    const bus = new InProcessBus();
    await expect(new BusApiSessionDirectory(bus).liveOf('i1')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    await bus.close();
  });

  it('keeps the spec’s SDK fields that are non-empty strings', () => {
    expect(sdkInfoOf(undefined)).toEqual({});
    expect(sdkInfoOf({ appId: 'app', appVersion: '', bogus: 'x', revision: 7, version: 'v' })).toEqual({
      appId: 'app',
      version: 'v',
    });
  });
});
