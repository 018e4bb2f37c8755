import { describe, expect, it } from 'vitest';
import { ApiError, requireName } from '../src/index.ts';

describe('requireName', () => {
  it('refuses an empty or absent name as the reference model does, and keeps any other as given', () => {
    for (const value of ['', undefined, null]) {
      let caught: unknown;
      try {
        requireName(value);
      } catch (err) {
        caught = err;
      }
      expect(caught).toBeInstanceOf(ApiError);
      expect((caught as ApiError).toJSON()).toMatchObject({
        code: 'COULD_NOT_VALIDATE',
        cause: { field: 'name', reason: 'name is required', value: '' },
      });
    }
    expect(requireName('  a ')).toBe('  a ');
    expect(() => requireName('', 'label')).toThrow(
      expect.objectContaining({ cause: { field: 'label', reason: 'label is required', value: '' } }),
    );
  });
});
