import { describe, expect, it } from 'vitest';
import type { PostureCheck, PostureCheckSpec } from './posture-checks.domain.ts';
import { specOf } from './posture-checks.domain.ts';
import type { ApiSessionPosture, IdentityPostureData, ProcessData } from './posture-data.domain.ts';
import { evaluateCheck } from './posture-evaluation.domain.ts';
import { inSemVerRange, parseSemVer, parseSemVerRange } from './semver-range.domain.ts';

/**
 * The evaluation rules of each posture check type (ziti `controller/model/posture_check_model_*.go`)
 * against posture data, without a database.
 */
const now = new Date('2026-01-01T12:00:00Z');
const ago = (seconds: number) => new Date(now.getTime() - seconds * 1000);
const check = (spec: PostureCheckSpec, id = 'c1'): PostureCheck => ({
  id,
  name: id,
  version: 1,
  roleAttributes: [],
  tags: {},
  spec,
  createdAt: ago(3600),
  updatedAt: ago(3600),
});
const reported = { postureCheckId: 'x', apiSessionId: 's1', reportedAt: ago(10) };
const data = (extra: Partial<IdentityPostureData> = {}): IdentityPostureData => ({
  processes: [],
  processByPath: new Map(),
  apiSessions: new Map(),
  ...extra,
});
const process = (p: Partial<ProcessData>): ProcessData => ({
  ...reported,
  path: '/bin/a',
  isRunning: true,
  binaryHash: 'ab12',
  signerFingerprints: ['ff00'],
  ...p,
});
const session = (s: Partial<ApiSessionPosture>): Map<string, ApiSessionPosture> =>
  new Map([
    [
      's1',
      {
        apiSessionId: 's1',
        live: true,
        mfaPassedAt: null,
        wokenAt: null,
        unlockedAt: null,
        endpointStateAt: null,
        ...s,
      },
    ],
  ]);
const passes = (c: PostureCheck, pd: IdentityPostureData) => evaluateCheck(c, 's1', pd, now).passing;

describe('semantic version ranges', () => {
  it('reads full versions strictly and ranges with operators, OR and wildcards', () => {
    expect(parseSemVer('10.0.19041')).toBeDefined();
    expect(parseSemVer('10.0')).toBeUndefined();
    expect(parseSemVer('01.0.0')).toBeUndefined();
    expect(parseSemVerRange('10')).toBeUndefined();
    const inRange = (range: string, v: string) => inSemVerRange(parseSemVerRange(range)!, parseSemVer(v)!);
    expect(inRange('>=10.0.0 <11.0.0', '10.5.1')).toBe(true);
    expect(inRange('>=10.0.0 <11.0.0', '11.0.0')).toBe(false);
    expect(inRange('<1.0.0 || >= 2.0.0', '2.1.0')).toBe(true);
    expect(inRange('1.2.x', '1.2.9')).toBe(true);
    expect(inRange('1.x', '2.0.0')).toBe(false);
    expect(inRange('>1.x', '2.0.0')).toBe(true);
    expect(inRange('!=1.0.0', '1.0.1')).toBe(true);
    expect(inRange('>10.0.0', '10.0.0-beta')).toBe(false);
  });
});

describe('posture check evaluation', () => {
  it('OS: type case-insensitively, versions as ranges (none: any), strict reported versions', () => {
    const os = check(
      specOf('OS', {
        operatingSystems: [
          { type: 'Windows', versions: ['>=10.0.0'] },
          { type: 'Linux', versions: [] },
        ],
      }),
    );
    expect(passes(os, data())).toBe(false);
    expect(passes(os, data({ os: { ...reported, type: 'windows', version: '10.0.1', build: '' } }))).toBe(true);
    expect(passes(os, data({ os: { ...reported, type: 'Windows', version: '9.9.9', build: '' } }))).toBe(false);
    expect(passes(os, data({ os: { ...reported, type: 'Windows', version: '10.0', build: '' } }))).toBe(false);
    expect(passes(os, data({ os: { ...reported, type: 'Linux', version: 'anything', build: '' } }))).toBe(true);
    expect(evaluateCheck(os, 's1', data(), now).failure).toEqual({
      actualValue: { type: '', version: '' },
      expectedValue: [
        { type: 'Linux', versions: [] },
        { type: 'Windows', versions: ['>=10.0.0'] },
      ],
    });
  });

  it('MAC and DOMAIN: any reported address among the check; domain case-insensitively', () => {
    const mac = check(specOf('MAC', { macAddresses: ['AA:BB:CC:DD:EE:FF'] }));
    expect(passes(mac, data({ mac: { ...reported, addresses: ['001122334455', 'aabbccddeeff'] } }))).toBe(true);
    expect(passes(mac, data({ mac: { ...reported, addresses: ['001122334455'] } }))).toBe(false);
    const domain = check(specOf('DOMAIN', { domains: ['Corp.Example'] }));
    expect(passes(domain, data({ domain: { ...reported, name: 'corp.example' } }))).toBe(true);
    expect(passes(domain, data())).toBe(false);
  });

  it('PROCESS: the response for the check id, running, signer and one of the hashes', () => {
    const spec = specOf('PROCESS', {
      process: { osType: 'Linux', path: '/bin/a', hashes: ['AB12'], signerFingerprint: 'FF00' },
    });
    const p = check(spec);
    expect(passes(p, data({ processes: [process({ postureCheckId: 'c1' })] }))).toBe(true);
    expect(passes(p, data({ processes: [process({ postureCheckId: 'other' })] }))).toBe(false);
    expect(passes(p, data({ processes: [process({ postureCheckId: 'c1', isRunning: false })] }))).toBe(false);
    expect(passes(p, data({ processes: [process({ postureCheckId: 'c1', binaryHash: 'cd34' })] }))).toBe(false);
    expect(passes(p, data({ processes: [process({ postureCheckId: 'c1', signerFingerprints: [] })] }))).toBe(false);
  });

  it('PROCESS_MULTI: processes by path, AllOf all of them, AnyOf one', () => {
    const processes = [
      { osType: 'Linux', path: '/bin/a', hashes: ['ab12'] },
      { osType: 'Linux', path: '/bin/b', signerFingerprints: ['ee'] },
    ];
    const a = process({ path: '/bin/a' });
    const b = process({ path: '/bin/b', signerFingerprints: ['EE'] });
    const byPath = (...list: ProcessData[]) => data({ processByPath: new Map(list.map((p) => [p.path, p])) });
    const allOf = check(specOf('PROCESS_MULTI', { semantic: 'AllOf', processes }));
    const anyOf = check(specOf('PROCESS_MULTI', { semantic: 'AnyOf', processes }));
    expect(passes(allOf, byPath(a, b))).toBe(true);
    expect(passes(allOf, byPath(a))).toBe(false);
    expect(passes(anyOf, byPath(a))).toBe(true);
    expect(passes(anyOf, byPath(process({ path: '/bin/a', binaryHash: 'zz' })))).toBe(false);
    expect(
      evaluateCheck(anyOf, 's1', byPath(process({ path: '/bin/a', isRunning: false })), now).failure,
    ).toMatchObject({
      semantic: 'AnyOf',
      actualValue: [{ path: '/bin/a', isRunning: false }],
    });
  });

  it('MFA: passed MFA in this API session, within the timeout, no unanswered wake or unlock prompt', () => {
    const plain = check(specOf('MFA', {}));
    expect(passes(plain, data())).toBe(false);
    expect(passes(plain, data({ apiSessions: session({}) }))).toBe(false);
    expect(passes(plain, data({ apiSessions: session({ mfaPassedAt: ago(99_999) }) }))).toBe(true);
    expect(evaluateCheck(plain, 'other', data({ apiSessions: session({ mfaPassedAt: ago(1) }) }), now).passing).toBe(
      false,
    );

    const timed = check(specOf('MFA', { timeoutSeconds: 600 }));
    const fresh = evaluateCheck(timed, 's1', data({ apiSessions: session({ mfaPassedAt: ago(100) }) }), now);
    expect(fresh).toMatchObject({ passing: true, timeout: 600, timeoutRemaining: 500 });
    const stale = evaluateCheck(timed, 's1', data({ apiSessions: session({ mfaPassedAt: ago(601) }) }), now);
    expect(stale).toMatchObject({ passing: false, timeoutRemaining: 0 });
    expect(stale.failure).toMatchObject({ actualValue: { passedMfa: true, timedOut: true } });

    const onWake = check(specOf('MFA', { timeoutSeconds: 3600, promptOnWake: true }));
    const woke = (seconds: number) =>
      evaluateCheck(
        onWake,
        's1',
        data({
          apiSessions: session({ mfaPassedAt: ago(1000), wokenAt: ago(seconds), endpointStateAt: ago(seconds) }),
        }),
        now,
      );
    // Woken before MFA: fine; woken since, within the 5 minute grace: still passing, time shortened; after it: failing.
    expect(woke(2000).passing).toBe(true);
    expect(woke(60)).toMatchObject({ passing: true, timeoutRemaining: 240 });
    expect(woke(60).lastUpdatedAt).toEqual(ago(60));
    expect(woke(301).passing).toBe(false);
    const unlockOnly = check(specOf('MFA', { promptOnUnlock: true }));
    expect(
      passes(
        unlockOnly,
        data({ apiSessions: session({ mfaPassedAt: ago(1000), wokenAt: ago(400), endpointStateAt: ago(400) }) }),
      ),
    ).toBe(true);
  });
});
