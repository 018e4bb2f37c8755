import type { AdmittableRouter } from '@ziti/contracts';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type AdmissionFacts, decideAdmission, sameFingerprint } from './admission.domain.ts';

/**
 * Admission as the reference decides it (ziti `controller/handler_ctrl/connect.go`, ROUTER-FACTS §1):
 * the chain verifies, the hello names the certificate's router, which exists, is enrolled with
 * exactly this certificate and is not disabled. Each refusal is tried alone, every other fact good.
 */

const fingerprint = '0123456789abcdef0123456789abcdef01234567';

function router(o: Partial<AdmittableRouter> = {}): AdmittableRouter {
  return {
    id: 'er-1',
    name: 'edge router one',
    kind: 'edge',
    fingerprint,
    isVerified: true,
    disabled: false,
    cost: 0,
    noTraversal: false,
    isTunnelerEnabled: false,
    ...o,
  };
}

function facts(o: Partial<AdmissionFacts> = {}): AdmissionFacts {
  return { chainVerified: true, commonName: 'er-1', fingerprint, helloId: 'er-1', router: router(), ...o };
}

describe('decideAdmission', () => {
  it('admits an enrolled, enabled router whose certificate, CN and hello agree', () => {
    const r = router();
    expect(decideAdmission(facts({ router: r }))).toEqual({ outcome: 'admitted', router: r });
  });

  it('admits a transit router alike', () => {
    const r = router({ kind: 'transit' });
    expect(decideAdmission(facts({ router: r })).outcome).toBe('admitted');
  });

  it.each<[string, Partial<AdmissionFacts>, RegExp]>([
    ['a chain that does not verify', { chainVerified: false }, /does not chain to the controller CA/],
    ['no client certificate (no fingerprint)', { fingerprint: null }, /does not chain to the controller CA/],
    ['no client certificate at all', { fingerprint: null, commonName: null, chainVerified: false }, /does not chain/],
    ['a certificate without a CN', { commonName: null }, /names no router/],
    ['an empty CN', { commonName: '' }, /names no router/],
    ['a hello naming another router', { helloId: 'er-2' }, /^the hello names router er-2, the certificate er-1$/],
    ['a hello differing only in case', { helloId: 'ER-1' }, /the hello names router ER-1/],
    ['an unknown router', { router: null }, /^no router er-1$/],
    [
      'a router not enrolled yet',
      { router: router({ isVerified: false, fingerprint: null }) },
      /not completed its enrollment/,
    ],
    [
      'a router whose re-enrollment is pending (fingerprint cleared)',
      { router: router({ fingerprint: null }) },
      /^router er-1 has not completed its enrollment$/,
    ],
    ['a router not verified though it has a fingerprint', { router: router({ isVerified: false }) }, /enrollment/],
    [
      'another certificate than the one enrolled',
      { fingerprint: 'ffffffffffffffffffffffffffffffffffffffff' },
      /^the client certificate is not the one router er-1 enrolled with$/,
    ],
    ['a fingerprint that is a prefix of the enrolled one', { fingerprint: fingerprint.slice(0, 39) }, /not the one/],
    ['a disabled router', { router: router({ disabled: true }) }, /^router er-1 is disabled$/],
  ])('refuses %s', (_what, o, reason) => {
    const decision = decideAdmission(facts(o));
    expect(decision.outcome).toBe('refused');
    expect(decision.outcome === 'refused' && decision.reason).toMatch(reason);
  });

  it('compares fingerprints without regard to case', () => {
    expect(decideAdmission(facts({ fingerprint: fingerprint.toUpperCase() })).outcome).toBe('admitted');
    expect(decideAdmission(facts({ router: router({ fingerprint: fingerprint.toUpperCase() }) })).outcome).toBe(
      'admitted',
    );
  });

  it('checks in the reference’s order: the certificate before the router record, enrollment before disabled', () => {
    // Everything wrong at once: the first check speaks.
    const all = facts({ chainVerified: false, commonName: null, helloId: 'x', router: null });
    expect(decideAdmission(all)).toMatchObject({ reason: expect.stringMatching(/does not chain/) });
    const notEnrolledAndDisabled = facts({ router: router({ fingerprint: null, isVerified: false, disabled: true }) });
    expect(decideAdmission(notEnrolledAndDisabled)).toMatchObject({ reason: expect.stringMatching(/enrollment/) });
    const otherCertAndDisabled = facts({ fingerprint: 'ab'.repeat(20), router: router({ disabled: true }) });
    expect(decideAdmission(otherCertAndDisabled)).toMatchObject({ reason: expect.stringMatching(/not the one/) });
  });

  it('never admits unless every fact is good (property)', () => {
    fc.assert(
      fc.property(
        fc.record({
          chainVerified: fc.boolean(),
          commonName: fc.constantFrom(null, '', 'er-1', 'er-2'),
          fingerprint: fc.constantFrom(null, '', fingerprint, fingerprint.toUpperCase(), 'ab'.repeat(20)),
          helloId: fc.constantFrom('er-1', 'er-2', ''),
          router: fc.option(
            fc.record({
              fingerprint: fc.constantFrom(null, '', fingerprint, 'ab'.repeat(20)),
              isVerified: fc.boolean(),
              disabled: fc.boolean(),
            }),
          ),
        }),
        (f) => {
          // The router is the one inventory has for the certificate's CN (RouterConnections.admit).
          const input = facts({
            ...f,
            router: f.router === null ? null : router({ ...f.router, id: f.commonName ?? '' }),
          });
          const decision = decideAdmission(input);
          const good =
            f.chainVerified &&
            !!f.fingerprint &&
            !!f.commonName &&
            f.helloId === f.commonName &&
            f.router !== null &&
            f.router.isVerified &&
            !!f.router.fingerprint &&
            f.fingerprint.toLowerCase() === f.router.fingerprint.toLowerCase() &&
            !f.router.disabled;
          expect(decision.outcome).toBe(good ? 'admitted' : 'refused');
        },
      ),
      { numRuns: 2_000 },
    );
  });
});

describe('sameFingerprint', () => {
  it.each([
    [fingerprint, fingerprint, true],
    [fingerprint, fingerprint.toUpperCase(), true],
    ['AbCdEf', 'aBcDeF', true],
    [fingerprint, 'ffffffffffffffffffffffffffffffffffffffff', false],
    [fingerprint, fingerprint.slice(0, -1), false],
    [fingerprint, `${fingerprint}0`, false],
    ['', fingerprint, false],
    ['', '', true],
  ])('%s vs %s → %s', (a, b, same) => {
    expect(sameFingerprint(a, b)).toBe(same);
    expect(sameFingerprint(b, a)).toBe(same);
  });

  it('agrees with a case-insensitive comparison (property)', () => {
    const hex = fc.stringMatching(/^[0-9a-fA-F]{0,42}$/);
    fc.assert(fc.property(hex, hex, (a, b) => sameFingerprint(a, b) === (a.toLowerCase() === b.toLowerCase())));
  });
});
