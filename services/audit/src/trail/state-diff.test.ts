import { describe, expect, it } from 'vitest';
import { redacted } from './redaction.domain.ts';
import { canonicalJson, diffStates } from './state-diff.domain.ts';

describe('diffStates', () => {
  it('lists each top-level field that differs, with its values before and after', () => {
    const before = { id: 'i1', name: 'alice', roleAttributes: ['a'], tags: { x: 1, y: 2 }, disabled: false };
    const after = { id: 'i1', name: 'alice2', roleAttributes: ['a'], tags: { y: 2, x: 1 }, disabled: true };
    expect(diffStates(before, after)).toEqual({
      disabled: { before: false, after: true },
      name: { before: 'alice', after: 'alice2' },
    });
  });

  it('takes a missing field as null, and a creation or deletion as every field', () => {
    expect(diffStates({ a: 1 }, { a: 1, b: 2 })).toEqual({ b: { before: null, after: 2 } });
    expect(diffStates(null, { id: 'x', name: 'n' })).toEqual({
      id: { before: null, after: 'x' },
      name: { before: null, after: 'n' },
    });
    expect(diffStates({ id: 'x' }, null)).toEqual({ id: { before: 'x', after: null } });
  });

  it('says only that a secret changed', () => {
    expect(diffStates({ password: 'old-secret' }, { password: 'new-secret' })).toEqual({
      password: { before: redacted, after: redacted },
    });
    expect(diffStates({ password: 'same' }, { password: 'same' })).toEqual({});
    expect(diffStates({ data: { token: 'a' } }, { data: { token: 'b' } })).toEqual({
      data: { before: { token: redacted }, after: { token: redacted } },
    });
  });

  it('compares arrays in order', () => {
    expect(diffStates({ r: ['a', 'b'] }, { r: ['b', 'a'] })).toEqual({ r: { before: ['a', 'b'], after: ['b', 'a'] } });
  });
});

describe('canonicalJson', () => {
  it('sorts object keys at every depth', () => {
    expect(canonicalJson({ b: 1, a: { d: [1, { z: 1, y: 2 }], c: null } })).toBe(
      '{"a":{"c":null,"d":[1,{"y":2,"z":1}]},"b":1}',
    );
  });
});
