import { ApiError } from '@ziti/contracts';

/** Entity role attributes are plain strings without `#`/`@` (ZITI-FACTS §2.3); stored sorted and unique. */
export function assertRoleAttributes(values: string[] | null | undefined, field = 'roleAttributes'): string[] {
  const list = values ?? [];
  for (const v of list) {
    if (typeof v !== 'string' || v.startsWith('#') || v.startsWith('@')) {
      throw ApiError.field(field, 'role attributes may not be prefixed with # or @', v);
    }
  }
  return [...new Set(list)].sort();
}

export { requireName } from '@ziti/contracts';

/** `tags`/`appData` are objects; null clears them to `{}` (clients reject null maps, ZITI-FACTS §16). */
export function mapOrEmpty(value: Record<string, unknown> | null | undefined): Record<string, unknown> {
  return value ?? {};
}

export function assertUint16(value: number | null | undefined, field: string, fallback = 0): number {
  const n = value ?? fallback;
  if (!Number.isInteger(n) || n < 0 || n > 65535)
    throw ApiError.field(field, `${field} must be an integer between 0 and 65535`, value);
  return n;
}

/** PUT replaces every updatable field (absent ones become empty); PATCH only those present. */
export function presentIn<T extends object>(input: T, mode: 'replace' | 'patch'): (key: keyof T) => boolean {
  return (key) => mode === 'replace' || Object.hasOwn(input, key);
}
