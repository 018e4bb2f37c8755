import { ApiError } from '@ziti/contracts';
import { describe, expect, it } from 'vitest';
import { assertExternalIdClaim, extractExternalId } from './external-id.domain.ts';
import { formatIdentityName } from './identity-name.domain.ts';
import type { ExternalIdClaim } from '../shared/model.domain.ts';
import { parsePemChain } from '@ziti/x509';
import { makeTestCa } from '../../test/support.ts';

const claim = (c: Partial<ExternalIdClaim>): ExternalIdClaim => ({
  location: 'COMMON_NAME',
  matcher: 'ALL',
  matcherCriteria: '',
  parser: 'NONE',
  parserCriteria: '',
  index: 0,
  ...c,
});

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(ApiError);
    expect((err as ApiError).code).toBe('COULD_NOT_VALIDATE');
    return (err as ApiError).cause?.field;
  }
  throw new Error('expected a field error');
}

describe('externalIdClaim validation', () => {
  it('accepts complete claims and keeps their values', () => {
    expect(assertExternalIdClaim(claim({ location: 'SAN_URI', matcher: 'SCHEME', matcherCriteria: 'spiffe' }))).toEqual(
      claim({ location: 'SAN_URI', matcher: 'SCHEME', matcherCriteria: 'spiffe' }),
    );
  });

  it('names the property that is wrong', () => {
    expect(fieldOf(() => assertExternalIdClaim({ ...claim({}), location: 'NOWHERE' }))).toBe(
      'externalIdClaim.location',
    );
    expect(fieldOf(() => assertExternalIdClaim({ ...claim({}), matcher: null }))).toBe('externalIdClaim.matcher');
    expect(fieldOf(() => assertExternalIdClaim({ ...claim({}), parser: 'X' }))).toBe('externalIdClaim.parser');
    expect(fieldOf(() => assertExternalIdClaim({ ...claim({}), index: -1 }))).toBe('externalIdClaim.index');
    expect(fieldOf(() => assertExternalIdClaim({ ...claim({}), matcherCriteria: null }))).toBe(
      'externalIdClaim.matcherCriteria',
    );
    // SCHEME only with SAN_URI, and SAN_URI only with ALL or SCHEME
    expect(fieldOf(() => assertExternalIdClaim(claim({ matcher: 'SCHEME', matcherCriteria: 'x' })))).toBe(
      'externalIdClaim.matcher',
    );
    expect(
      fieldOf(() => assertExternalIdClaim(claim({ location: 'SAN_URI', matcher: 'PREFIX', matcherCriteria: 'x' }))),
    ).toBe('externalIdClaim.matcher');
    // criteria where the matcher or the parser needs them
    expect(fieldOf(() => assertExternalIdClaim(claim({ matcher: 'PREFIX' })))).toBe('externalIdClaim.matcherCriteria');
    expect(fieldOf(() => assertExternalIdClaim(claim({ parser: 'SPLIT' })))).toBe('externalIdClaim.parserCriteria');
  });
});

describe('externalIdClaim extraction', () => {
  it('locates, matches, splits and indexes', async () => {
    const ca = await makeTestCa('Claims CA');
    const issued = await ca.issueClient('CN=tenant:alice:42', {
      sans: [
        { type: 'url', value: 'https://example.com/x' },
        { type: 'url', value: 'spiffe://example.org/workload/7' },
        { type: 'email', value: 'bob@example.com' },
        { type: 'email', value: 'carol@corp.example' },
      ],
    });
    const cert = parsePemChain(issued.certPem)[0]!;
    expect(extractExternalId(claim({}), cert)).toBe('tenant:alice:42');
    expect(extractExternalId(claim({ parser: 'SPLIT', parserCriteria: ':', index: 1 }), cert)).toBe('alice');
    expect(extractExternalId(claim({ matcher: 'PREFIX', matcherCriteria: 'other:' }), cert)).toBeUndefined();
    expect(extractExternalId(claim({ location: 'SAN_URI', matcher: 'SCHEME', matcherCriteria: 'spiffe' }), cert)).toBe(
      'spiffe://example.org/workload/7',
    );
    expect(extractExternalId(claim({ location: 'SAN_URI', index: 1 }), cert)).toBe('spiffe://example.org/workload/7');
    expect(
      extractExternalId(claim({ location: 'SAN_EMAIL', matcher: 'SUFFIX', matcherCriteria: '@corp.example' }), cert),
    ).toBe('carol@corp.example');
    expect(
      extractExternalId(
        claim({
          location: 'SAN_EMAIL',
          matcher: 'SUFFIX',
          matcherCriteria: '@corp.example',
          parser: 'SPLIT',
          parserCriteria: '@',
        }),
        cert,
      ),
    ).toBe('carol');
    expect(extractExternalId(claim({ location: 'SAN_EMAIL', index: 5 }), cert)).toBeUndefined();
  });
});

describe('identity name format', () => {
  const values = { caName: 'Acme', caId: 'c1', commonName: 'laptop', requestedName: 'mine', identityId: 'i9' };
  it('fills every symbol and leaves unknown brackets', () => {
    expect(formatIdentityName('[caName]-[commonName]', values)).toBe('Acme-laptop');
    expect(formatIdentityName('[requestedName]@[caId]/[identityId] [other]', values)).toBe('mine@c1/i9 [other]');
  });
});
